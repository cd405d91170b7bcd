package sms.emulator;

import java.lang.reflect.Field;
import java.util.Comparator;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import de.bwaldvogel.mongo.backend.ArrayFilters;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.EmptyIndex;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.backend.memory.MemoryCollection;
import de.bwaldvogel.mongo.backend.memory.MemoryDatabase;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.oplog.Oplog;

/**
 * The library's in-memory backend with these fixes:
 * <ul>
 * <li>Index use: the library uses a (unique) index only when the query consists of exactly the
 * index's fields, so {@code {_id: x, status: "A"}} scans the whole collection. Here a query that
 * pins every field of a unique index to a plain value reads that index's entry and checks the rest
 * of the query on the (at most one) document.</li>
 * <li>Non-unique indexes: the library accepts them but builds none, so their queries scan. Here they
 * are {@link SecondaryIndex}es, and a query with an equality, {@code $in} or range condition on the
 * first field of one, or {@code $in} on a single-field unique index such as {@code _id} (also next to
 * range operators), takes its candidates from the most selective of those and checks each with the
 * library's matcher as before. A secondary index's candidates come in position order, a scan's, so
 * results (and which documents a limit keeps) are the same as without the index. A sorted, limited
 * query with a range on its sort field walks that field's index in order ({@link IndexedQueries},
 * shared with {@link EmulatorH2Backend}).</li>
 * <li>Snapshot reads: the library hands out the stored document objects and updates them in place,
 * so a reply being encoded on one thread while another thread updates the document could fail
 * (ConcurrentModificationException) or show a half-applied update. Here query results are copies
 * taken under the collection's lock, and an update changes a stored document only under that lock
 * and only by replacing its values with new ones, so a value once stored is never modified.</li>
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

            /** Fields through sub-documents or arrays ("a.b") match by rules of their own: those still scan. */
            @Override
            protected Index<Integer> openOrCreateSecondaryIndex(String collectionName, String indexName,
                                                                List<IndexKey> keys, boolean sparse) {
                return keys.get(0).getKey().contains(".") ? new EmptyIndex<>(indexName, keys)
                    : new SecondaryIndex<>(indexName, keys);
            }
        };
    }

    private static final class EmulatorCollection extends MemoryCollection
        implements PublishedDocuments, IndexedQueries.Storage<Integer> {

        private final List<Document> documents;
        private final IndexedQueries<Integer> indexed = new IndexedQueries<>(this, Comparator.naturalOrder());

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
        public Document documentAt(Integer position) {
            return documents.get(position.intValue());
        }

        @Override
        public boolean matches(Document document, Document query) {
            return documentMatchesQuery(document, query);
        }

        @Override
        public void forEachDocument(BiConsumer<Integer, Document> action) {
            for (int position = 0; position < documents.size(); position++) {
                Document document = documents.get(position);
                if (document != null) {
                    action.accept(position, document);
                }
            }
        }

        @Override
        public String idField() {
            return getIdField();
        }

        @Override
        protected QueryResult queryDocuments(Document query, Document orderBy, int numberToSkip, int numberToReturn,
                                             int batchSize, Document fieldSelector) {
            Iterable<Integer> pinned = indexed.pinnedPositions(query);
            if (pinned != null) {
                return matchDocuments(query, pinned, orderBy, numberToSkip, numberToReturn, batchSize, fieldSelector);
            }
            List<Document> ordered = indexed.orderedScan(query, orderBy, numberToSkip, numberToReturn);
            if (ordered != null) {
                return matchDocumentsFromStream(query, ordered.stream(), 0, numberToReturn, batchSize, null,
                    fieldSelector); // already in order
            }
            IndexedQueries.Plan<Integer> plan = isNaturalDescending(orderBy) ? null : indexed.plan(query);
            if (plan != null) {
                return matchDocuments(plan.query(), plan.positions(), orderBy, numberToSkip, numberToReturn, batchSize,
                    fieldSelector);
            }
            return super.queryDocuments(query, orderBy, numberToSkip, numberToReturn, batchSize, fieldSelector);
        }

        /**
         * The library recomputes the BSON size of the old and the new document on every update, only
         * to report a collection's data size in collStats: a fifth of the emulator's time under an
         * update-heavy load. The size is not tracked here (collStats reports 0).
         */
        @Override
        protected boolean tracksDataSize() {
            return false;
        }

        @Override
        public synchronized Document published(Object id) {
            for (Index<Integer> index : getIndexes()) {
                if (index.isUnique() && index.getKeys().size() == 1
                    && index.getKeys().get(0).getKey().equals(getIdField())) {
                    Integer position = index.getPosition(new Document(getIdField(), id));
                    return position == null ? null : documents.get(position.intValue());
                }
            }
            return null;
        }

        /** The library counts outside the collection's lock; the indexes are used only under it. */
        @Override
        public synchronized int count(Document query, int skip, int limit) {
            return super.count(query, skip, limit);
        }

        @Override
        protected Integer addDocumentInternal(Document document) {
            Integer position = super.addDocumentInternal(document);
            indexed.put(position, document);
            return position;
        }

        @Override
        protected void removeDocument(Integer position) {
            indexed.remove(position);
            super.removeDocument(position);
        }

        /** Set while an update runs (under the collection's lock): see matchDocumentsFromStream. */
        private boolean updating;

        @Override
        public synchronized Document updateDocuments(Document selector, Document updateQuery, ArrayFilters arrayFilters,
                                                     boolean isMulti, boolean isUpsert, Oplog oplog) {
            updating = true;
            try {
                return super.updateDocuments(selector, updateQuery, arrayFilters, isMulti, isUpsert, oplog);
            } finally {
                updating = false;
            }
        }

        /**
         * Every query result passes here (called under the collection's lock): hand out copies. The
         * query of an update is the exception: the library copies each matched document itself (the
         * old version, and the new one it computes), then replaces the values of the stored one with
         * the new, freshly built values; nothing outside the lock holds the stored object itself.
         */
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
            List<Document> copies = (updating ? matched : matched.map(Document::cloneDeeply))
                .collect(Collectors.toList());
            return super.matchDocumentsFromStream(query, copies.stream(), 0, numberToReturn, batchSize, null,
                fieldSelector); // already sorted
        }

        /** Sorts with {@link IndexedQueries#sortComparator} where it applies. */
        @Override
        protected QueryResult matchDocumentsFromStream(Stream<Document> documentStream, Document query,
                                                       Document orderBy, int numberToSkip, int limit, int batchSize,
                                                       Document fieldSelector) {
            Comparator<Document> comparator = IndexedQueries.sortComparator(orderBy);
            if (comparator == null) {
                comparator = deriveComparator(orderBy);
            }
            return matchDocumentsFromStream(query, documentStream, numberToSkip, limit, batchSize, comparator,
                fieldSelector);
        }

        /** The library has just applied the update to its (copied) query result: store that copy. */
        @Override
        protected void handleUpdate(Integer position, Document oldDocument, Document newDocument) {
            documents.set(position.intValue(), newDocument);
            indexed.put(position, newDocument);
        }
    }
}
