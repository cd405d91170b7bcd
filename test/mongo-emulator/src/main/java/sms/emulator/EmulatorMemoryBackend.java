package sms.emulator;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import de.bwaldvogel.mongo.backend.ArrayFilters;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.EmptyIndex;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.backend.ValueComparator;
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
 * results (and which documents a limit keeps) are the same as without the index.</li>
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
                    : new SecondaryIndex(indexName, keys);
            }
        };
    }

    private static final class EmulatorCollection extends MemoryCollection implements PublishedDocuments {

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
            Plan plan = isNaturalDescending(orderBy) ? null : plan(query);
            if (plan != null) {
                return matchDocuments(plan.query(), plan.positions(), orderBy, numberToSkip, numberToReturn, batchSize,
                    fieldSelector);
            }
            return super.queryDocuments(query, orderBy, numberToSkip, numberToReturn, batchSize, fieldSelector);
        }

        /** Candidate positions and the query to check them with. */
        private record Plan(Iterable<Integer> positions, Document query) {
        }

        /**
         * Candidates from the index that offers the fewest for a condition on a top-level field, or
         * null (scan). Key and {@code $in} lookups are counted first, as that is cheap; ranges are then
         * counted only up to the best count so far. A secondary index gives positions in scan order;
         * a unique index gives them in key order, as the library's own {@code $in} lookup (which this
         * replaces for a query of just that condition) and mongod do.
         */
        private Plan plan(Document query) {
            Index<Integer> best = null;
            SecondaryIndex.Bounds bestBounds = null;
            int bestCount = Integer.MAX_VALUE;
            for (boolean ranges : new boolean[] {false, true}) {
                for (Index<Integer> index : getIndexes()) {
                    String field = index.getKeys().get(0).getKey();
                    SecondaryIndex.Bounds bounds = SecondaryIndex.bounds(query.get(field));
                    if (bounds == null || (bounds.keys() == null) != ranges) {
                        continue;
                    }
                    int count;
                    if (index instanceof SecondaryIndex secondary) {
                        secondary.build(documents);
                        count = secondary.count(bounds, bestCount);
                    } else if (index.isUnique() && index.getKeys().size() == 1 && !field.contains(".")
                               && bounds.keys() != null) {
                        count = bounds.keys().size(); // at most one document per key
                    } else {
                        continue;
                    }
                    if (count < bestCount) {
                        best = index;
                        bestBounds = bounds;
                        bestCount = count;
                    }
                }
            }
            if (best instanceof SecondaryIndex secondary) {
                BitSet positions = new BitSet();
                secondary.collect(bestBounds, positions);
                return new Plan(() -> positions.stream().boxed().iterator(), query);
            }
            if (best == null) {
                return null;
            }
            // One lookup per key (the library's $in lookup drops keys its number comparison deems equal).
            String field = best.getKeys().get(0).getKey();
            List<Object> keys = new ArrayList<>(bestBounds.keys());
            keys.sort(SecondaryIndex.ORDER);
            Set<Integer> positions = new LinkedHashSet<>();
            for (Object key : keys) {
                best.getPositions(new Document(field, key)).forEach(positions::add);
            }
            // Exactly the documents whose _id (never an array) equals a listed one, as the matcher
            // compares: spare it comparing each candidate with the whole list.
            return new Plan(positions, bestBounds.in() && field.equals(getIdField()) ? withoutIn(query, field) : query);
        }

        private static Document withoutIn(Document query, String field) {
            Document operators = ((Document) query.get(field)).clone();
            operators.remove("$in");
            Document rest = query.clone();
            if (operators.isEmpty()) {
                rest.remove(field);
            } else {
                rest.put(field, operators);
            }
            return rest;
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
            secondaryIndexes().forEach(index -> index.put(position, document));
            return position;
        }

        @Override
        protected void removeDocument(Integer position) {
            secondaryIndexes().forEach(index -> index.remove(position));
            super.removeDocument(position);
        }

        private Stream<SecondaryIndex> secondaryIndexes() {
            return getIndexes().stream().filter(SecondaryIndex.class::isInstance).map(SecondaryIndex.class::cast);
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

        /**
         * Sorts like the library's DocumentComparator, but looks each document's sort values up once
         * instead of at every comparison (its path lookups dominated sorting thousands of results).
         */
        @Override
        protected QueryResult matchDocumentsFromStream(Stream<Document> documentStream, Document query,
                                                       Document orderBy, int numberToSkip, int limit, int batchSize,
                                                       Document fieldSelector) {
            Comparator<Document> comparator = deriveComparator(orderBy);
            if (comparator != null && orderBy.values().stream().allMatch(Number.class::isInstance)) {
                List<String> keys = List.copyOf(orderBy.keySet());
                List<Comparator<Object>> order = orderBy.values().stream()
                    .map(direction -> ((Number) direction).intValue() > 0 ? ValueComparator.asc() : ValueComparator.desc())
                    .collect(Collectors.toList());
                Map<Document, Object[]> values = new IdentityHashMap<>();
                Function<Document, Object[]> sortValues = document -> values.computeIfAbsent(document,
                    d -> keys.stream().map(key -> Utils.getSubdocumentValueCollectionAware(d, key)).toArray());
                comparator = (document1, document2) -> {
                    Object[] values1 = sortValues.apply(document1);
                    Object[] values2 = sortValues.apply(document2);
                    for (int i = 0; i < values1.length; i++) {
                        int cmp = order.get(i).compare(values1[i], values2[i]);
                        if (cmp != 0) {
                            return cmp;
                        }
                    }
                    return 0;
                };
            }
            return matchDocumentsFromStream(query, documentStream, numberToSkip, limit, batchSize, comparator,
                fieldSelector);
        }

        /** The library has just applied the update to its (copied) query result: store that copy. */
        @Override
        protected void handleUpdate(Integer position, Document oldDocument, Document newDocument) {
            documents.set(position.intValue(), newDocument);
            secondaryIndexes().forEach(index -> index.put(position, newDocument));
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
