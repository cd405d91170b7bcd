package sms.emulator;

import java.lang.reflect.Field;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

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
 * The library's in-memory backend with two fixes:
 * <ul>
 * <li>Index use: the library uses a (unique) index only when the query consists of exactly the
 * index's fields, so {@code {_id: x, status: "A"}} scans the whole collection. Here a query that
 * pins every field of a unique index to a plain value reads that index's entry and checks the rest
 * of the query on the (at most one) document.</li>
 * <li>Snapshot reads: the library hands out the stored document objects and updates them in place,
 * so a reply being encoded on one thread while another thread updates the document could fail
 * (ConcurrentModificationException) or show a half-applied update. Here query results are copies
 * taken under the collection's lock, and an update stores the updated copy instead of changing the
 * published object, which is therefore never modified again.</li>
 * </ul>
 */
class EmulatorMemoryBackend extends MemoryBackend {

    private static final Field DOCUMENTS;

    static {
        try {
            DOCUMENTS = MemoryCollection.class.getDeclaredField("documents");
            DOCUMENTS.setAccessible(true);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @Override
    public MemoryDatabase openOrCreateDatabase(String databaseName) {
        return new MemoryDatabase(databaseName, getCursorRegistry()) {
            @Override
            protected MemoryCollection openOrCreateCollection(String collectionName, CollectionOptions options) {
                return new EmulatorCollection(this, collectionName, options, cursorRegistry);
            }
        };
    }

    private static final class EmulatorCollection extends MemoryCollection {

        private final List<Document> documents;

        @SuppressWarnings("unchecked")
        EmulatorCollection(MemoryDatabase database, String collectionName, CollectionOptions options,
                           CursorRegistry cursorRegistry) {
            super(database, collectionName, options, cursorRegistry);
            try {
                documents = (List<Document>) DOCUMENTS.get(this);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
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

        /** Every query result passes here (called under the collection's lock): hand out copies. */
        @Override
        protected QueryResult matchDocumentsFromStream(Document query, Stream<Document> documentStream, int numberToSkip,
                                                       int numberToReturn, int batchSize,
                                                       Comparator<Document> comparator, Document fieldSelector) {
            Stream<Document> matched = documentStream.filter(document -> documentMatchesQuery(document, query));
            if (comparator != null) {
                matched = matched.sorted(comparator);
            }
            if (numberToSkip > 0) {
                matched = matched.skip(numberToSkip);
            }
            if (numberToReturn > 0) {
                matched = matched.limit(numberToReturn);
            }
            List<Document> copies = matched.map(Document::cloneDeeply).collect(Collectors.toList());
            return super.matchDocumentsFromStream(query, copies.stream(), 0, numberToReturn, batchSize, comparator,
                fieldSelector);
        }

        /** The library has just applied the update to its (copied) query result: store that copy. */
        @Override
        protected void handleUpdate(Integer position, Document oldDocument, Document newDocument) {
            documents.set(position.intValue(), newDocument);
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
