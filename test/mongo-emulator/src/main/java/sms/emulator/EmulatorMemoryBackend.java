package sms.emulator;

import java.util.List;
import java.util.regex.Pattern;

import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.backend.memory.MemoryCollection;
import de.bwaldvogel.mongo.backend.memory.MemoryDatabase;
import de.bwaldvogel.mongo.bson.Document;

/**
 * The in-memory backend, with one query-planning improvement: the library uses a (unique) index
 * only when the query consists of exactly the index's fields, so {@code {_id: x, status: "A"}}
 * scans the whole collection. Here a query that pins every field of a unique index to a plain
 * value reads that index's entry and checks the rest of the query on the (at most one) document.
 */
class IndexedMemoryBackend extends MemoryBackend {

    @Override
    public MemoryDatabase openOrCreateDatabase(String databaseName) {
        return new MemoryDatabase(databaseName, getCursorRegistry()) {
            @Override
            protected MemoryCollection openOrCreateCollection(String collectionName, CollectionOptions options) {
                return new IndexedCollection(this, collectionName, options, cursorRegistry);
            }
        };
    }

    private static final class IndexedCollection extends MemoryCollection {

        IndexedCollection(MemoryDatabase database, String collectionName, CollectionOptions options,
                          CursorRegistry cursorRegistry) {
            super(database, collectionName, options, cursorRegistry);
        }

        @Override
        protected QueryResult queryDocuments(Document query, Document orderBy, int numberToSkip, int numberToReturn,
                                             int batchSize, Document fieldSelector) {
            for (Index<Integer> index : getIndexes()) {
                Document pinned = pinnedKeys(index.getKeys(), query);
                if (pinned != null && index.canHandle(pinned)) {
                    return matchDocuments(query, index.getPositions(pinned), orderBy, numberToSkip, numberToReturn,
                        batchSize, fieldSelector);
                }
            }
            return super.queryDocuments(query, orderBy, numberToSkip, numberToReturn, batchSize, fieldSelector);
        }

        /** The index's fields with their values, when the query has more fields and pins each key to a plain value. */
        private static Document pinnedKeys(List<IndexKey> keys, Document query) {
            if (keys.isEmpty() || query.size() <= keys.size()) {
                return null;
            }
            Document pinned = new Document();
            for (IndexKey key : keys) {
                Object value = query.get(key.getKey());
                if (value == null || value instanceof Document || value instanceof List<?> || value instanceof Pattern) {
                    return null;
                }
                pinned.put(key.getKey(), value);
            }
            return pinned;
        }
    }
}
