package sms.emulator;

import java.lang.reflect.Field;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.h2.mvstore.MVMap;
import org.h2.mvstore.MVStore;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.AbstractUniqueIndex;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.EmptyIndex;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.KeyValue;
import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.h2.H2Collection;
import de.bwaldvogel.mongo.backend.h2.H2Database;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.IndexBuildFailedException;
import de.bwaldvogel.mongo.exception.MongoServerError;

/**
 * The library's H2 (MVStore file) backend, which builds no non-unique index and so scans the whole
 * collection for every query that does not name exactly a unique index's fields, with the fixes of
 * {@link EmulatorMemoryBackend}:
 * <ul>
 * <li>Index use ({@link IndexedQueries}): unique indexes for queries with more fields, non-unique
 * indexes as {@link SecondaryIndex}es, ordered walks for sorted, limited range queries. A secondary
 * index is kept in memory only, keyed by the documents' positions (their {@code _id}, the key of the
 * collection's MVMap); it is built from the stored documents when the store is opened (all of a
 * collection's indexes in one pass) or on first use, and kept up to date by every insert, update and
 * delete under the collection's lock. Unique indexes, which the library stores in the MVStore, are
 * kept in memory the same way ({@code HeapUniqueIndex}, see openOrCreateUniqueIndex). The MVStore's
 * documents stay the only durable state, and the source of truth.</li>
 * <li>Snapshot reads: query results are copies taken under the collection's lock, and an update
 * stores a new document object instead of changing the stored one in place (which the library does,
 * and which the MVStore's background writer may be serializing at that moment).</li>
 * <li>No data size tracking: the library rewrites a meta entry with the collection's size on every
 * write, only for collStats (which reports 0 here, as on the memory backend).</li>
 * </ul>
 */
class EmulatorH2Backend extends H2Backend {

    private static final Field MV_STORE;

    static {
        try {
            MV_STORE = H2Database.class.getDeclaredField("mvStore");
            MV_STORE.setAccessible(true);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    EmulatorH2Backend(String fileName) {
        super(fileName);
    }

    @Override
    protected MongoDatabase openOrCreateDatabase(String databaseName) {
        return new EmulatorH2Database(databaseName, getMvStore(), getCursorRegistry());
    }

    private static final class EmulatorH2Database extends H2Database {

        EmulatorH2Database(String databaseName, MVStore mvStore, CursorRegistry cursorRegistry) {
            super(databaseName, mvStore, cursorRegistry);
            buildStoredIndexes();
        }

        /** The secondary indexes of a store opened with data: built now, before the first query waits for them. */
        private void buildStoredIndexes() {
            MongoCollection<Object> indexes = resolveCollection("system.indexes", false);
            if (indexes == null) {
                return;
            }
            List<String> namespaces = indexes.queryAllAsStream()
                .map(index -> index.get("ns"))
                .filter(String.class::isInstance)
                .map(String.class::cast)
                .distinct()
                .collect(Collectors.toList());
            for (String ns : namespaces) {
                if (!ns.startsWith(getDatabaseName() + ".")) {
                    continue;
                }
                if (resolveCollection(ns.substring(getDatabaseName().length() + 1), false)
                    instanceof EmulatorH2Collection collection) {
                    collection.buildIndexes();
                }
            }
        }

        /** The store; read from the super class, as this is called from its constructor (opening a stored database). */
        private MVStore mvStore() {
            try {
                return (MVStore) MV_STORE.get(this);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        protected MongoCollection<Object> openOrCreateCollection(String collectionName, CollectionOptions options) {
            MVStore mvStore = mvStore();
            String fullCollectionName = getDatabaseName() + "." + collectionName;
            MVMap<Object, Document> dataMap = mvStore.openMap("databases." + fullCollectionName);
            MVMap<String, Object> metaMap = mvStore.openMap("meta." + fullCollectionName);
            return new EmulatorH2Collection(this, collectionName, options, dataMap, metaMap, cursorRegistry);
        }

        /**
         * Unique indexes in memory too, rebuilt from the documents when the collection is opened (the
         * library adds an empty index by indexing every document). The library keeps them in MVMaps
         * keyed by its KeyValue, which H2 can only compare by Java-serializing both keys, at every
         * step of every lookup's binary search: 60 % of the emulator's time under the delivery
         * benchmark. Such a map left by an earlier version in the store is removed.
         */
        @Override
        protected Index<Object> openOrCreateUniqueIndex(String collectionName, String indexName, List<IndexKey> keys,
                                                        boolean sparse) {
            MVStore mvStore = mvStore();
            String stored = getDatabaseName() + "." + collectionName + "._index_" + indexName;
            if (mvStore.hasMap(stored)) {
                mvStore.removeMap(stored);
            }
            return new HeapUniqueIndex(indexName, keys, sparse);
        }

        /** Fields through sub-documents or arrays ("a.b") match by rules of their own: those still scan. */
        @Override
        protected Index<Object> openOrCreateSecondaryIndex(String collectionName, String indexName,
                                                           List<IndexKey> keys, boolean sparse) {
            return keys.get(0).getKey().contains(".") ? new EmptyIndex<>(indexName, keys)
                : new SecondaryIndex<>(indexName, keys);
        }
    }

    /** A unique index in a hash map, as the memory backend's; positions are _id keys (null as Missing, as H2 does). */
    private static final class HeapUniqueIndex extends AbstractUniqueIndex<Object> {

        private final Map<KeyValue, Object> index = new ConcurrentHashMap<>();

        HeapUniqueIndex(String name, List<IndexKey> keys, boolean sparse) {
            super(name, keys, sparse);
        }

        @Override
        public long getCount() {
            return index.size();
        }

        @Override
        public boolean isEmpty() {
            return index.isEmpty();
        }

        @Override
        public long getDataSize() {
            return getCount();
        }

        @Override
        protected Object removeDocument(KeyValue keyValue) {
            return index.remove(keyValue);
        }

        @Override
        protected boolean putKeyPosition(KeyValue keyValue, Object position) {
            return index.putIfAbsent(keyValue, Missing.ofNullable(position)) == null;
        }

        @Override
        protected Object getPosition(KeyValue keyValue) {
            return index.get(keyValue);
        }

        @Override
        protected Iterable<Map.Entry<KeyValue, Object>> getIterable() {
            return index.entrySet();
        }
    }

    private static final class EmulatorH2Collection extends H2Collection
        implements PublishedDocuments, IndexedQueries.Storage<Object> {

        private final MVMap<Object, Document> dataMap;
        private final IndexedQueries<Object> indexed;

        EmulatorH2Collection(MongoDatabase database, String collectionName, CollectionOptions options,
                             MVMap<Object, Document> dataMap, MVMap<String, Object> metaMap,
                             CursorRegistry cursorRegistry) {
            super(database, collectionName, options, dataMap, metaMap, cursorRegistry);
            this.dataMap = dataMap;
            // A scan meets the documents in the MVMap's key order.
            Comparator<Object> keyOrder = dataMap.getKeyType()::compare;
            this.indexed = new IndexedQueries<>(this, keyOrder);
        }

        /**
         * A new unique index is built in one pass over the documents, each checked against those
         * indexed before it (the library reads them all twice, to check and then to add; opening a
         * store of 200000 messages took over a minute with it): a duplicate fails the build alike.
         */
        @Override
        public synchronized void addIndex(Index<Object> index) {
            if (!(index instanceof HeapUniqueIndex) || !index.isEmpty()
                || getIndexes().stream().anyMatch(existing -> existing.getName().equals(index.getName()))) {
                super.addIndex(index);
                return;
            }
            try {
                for (Map.Entry<Object, Document> entry : dataMap.entrySet()) {
                    index.checkAdd(entry.getValue(), this);
                    index.add(entry.getValue(), entry.getKey(), this);
                }
            } catch (MongoServerError e) {
                throw new IndexBuildFailedException(e, this);
            }
            getIndexes().add(index);
        }

        synchronized void buildIndexes() {
            indexed.buildIndexes();
        }

        @Override
        public Document documentAt(Object position) {
            return dataMap.get(position);
        }

        @Override
        public boolean matches(Document document, Document query) {
            return documentMatchesQuery(document, query);
        }

        @Override
        public void forEachDocument(BiConsumer<Object, Document> action) {
            for (Map.Entry<Object, Document> entry : dataMap.entrySet()) {
                action.accept(entry.getKey(), entry.getValue());
            }
        }

        @Override
        public String idField() {
            return getIdField();
        }

        @Override
        protected QueryResult queryDocuments(Document query, Document orderBy, int numberToSkip, int numberToReturn,
                                             int batchSize, Document fieldSelector) {
            Iterable<Object> pinned = indexed.pinnedPositions(query);
            if (pinned != null) {
                return matchDocuments(query, pinned, orderBy, numberToSkip, numberToReturn, batchSize, fieldSelector);
            }
            List<Document> ordered = indexed.orderedScan(query, orderBy, numberToSkip, numberToReturn);
            if (ordered != null) {
                return matchDocumentsFromStream(query, ordered.stream(), 0, numberToReturn, batchSize, null,
                    fieldSelector); // already in order
            }
            IndexedQueries.Plan<Object> plan = isNaturalDescending(orderBy) ? null : indexed.plan(query);
            if (plan != null) {
                return matchDocuments(plan.query(), plan.positions(), orderBy, numberToSkip, numberToReturn, batchSize,
                    fieldSelector);
            }
            return super.queryDocuments(query, orderBy, numberToSkip, numberToReturn, batchSize, fieldSelector);
        }

        @Override
        protected boolean tracksDataSize() {
            return false;
        }

        /** Stored documents are never modified (updates store new objects): safe to hand out under the lock. */
        @Override
        public synchronized Document published(Object id) {
            for (Index<Object> index : getIndexes()) {
                if (index.isUnique() && index.getKeys().size() == 1
                    && index.getKeys().get(0).getKey().equals(getIdField())) {
                    Object position = index.getPosition(new Document(getIdField(), id));
                    return position == null ? null : dataMap.get(position);
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
        protected Object addDocumentInternal(Document document) {
            Object position = super.addDocumentInternal(document);
            indexed.put(position, document);
            return position;
        }

        @Override
        protected void removeDocument(Object position) {
            indexed.remove(position);
            super.removeDocument(position);
        }

        /**
         * Every query result passes here (under the collection's lock): copies, also for the query of
         * an update, which the library then changes in place and hands to {@link #handleUpdate}.
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
            List<Document> copies = matched.map(Document::cloneDeeply).collect(Collectors.toList());
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

        /** The library has applied the update to its copy of the document: store that copy. */
        @Override
        protected void handleUpdate(Object position, Document oldDocument, Document newDocument) {
            super.handleUpdate(position, oldDocument, newDocument);
            indexed.put(position, newDocument);
        }
    }
}
