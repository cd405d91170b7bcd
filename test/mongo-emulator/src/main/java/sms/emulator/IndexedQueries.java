package sms.emulator;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.backend.ValueComparator;
import de.bwaldvogel.mongo.bson.Document;

/**
 * How the emulator's collections (in memory: {@link EmulatorMemoryBackend}; H2:
 * {@link EmulatorH2Backend}) answer a query from their indexes instead of scanning, and keep their
 * {@link SecondaryIndex}es. Every path only selects candidates, which the library's matcher then
 * checks as in a scan, in the order a scan would meet them (the collection's position order), so a
 * query returns the same documents in the same order as without the index:
 * <ul>
 * <li>a query that pins every field of a unique index to a plain value, and has more fields, reads
 * that index's entry (the library uses a unique index only for a query of exactly its fields);</li>
 * <li>an equality, {@code $in} or range condition on the first field of a secondary index, or
 * {@code $in} on a single-field unique index such as {@code _id}, takes its candidates from the
 * index offering the fewest;</li>
 * <li>a query sorted on one field, with a limit and a range on that field (or {@code $exists: true},
 * when the index holds every document that has the field), walks that field's secondary index in
 * sort order and stops at the limit, as mongod does with an index that provides the sort (ties in
 * position order, as the library's stable sort keeps them).</li>
 * </ul>
 * All of it runs under the collection's lock.
 *
 * @param <P> the collection's position type
 */
final class IndexedQueries<P> {

    /** What the planner needs of its collection (whose own methods are protected). */
    interface Storage<P> {
        List<Index<P>> getIndexes();

        /** The stored document at position, or null. */
        Document documentAt(P position);

        boolean matches(Document document, Document query);

        /** Every stored document with its position. */
        void forEachDocument(BiConsumer<P, Document> action);

        String idField();
    }

    /** Candidate positions, in scan order, and the query to check them with. */
    record Plan<P>(Iterable<P> positions, Document query) {
    }

    private final Storage<P> storage;
    /** The order a scan meets positions in. */
    private final Comparator<? super P> positionOrder;

    IndexedQueries(Storage<P> storage, Comparator<? super P> positionOrder) {
        this.storage = storage;
        this.positionOrder = positionOrder;
    }

    List<SecondaryIndex<P>> secondaryIndexes() {
        List<SecondaryIndex<P>> secondaries = new ArrayList<>();
        for (Index<P> index : storage.getIndexes()) {
            if (index instanceof SecondaryIndex<P> secondary) {
                secondaries.add(secondary);
            }
        }
        return secondaries;
    }

    /** Builds every secondary index not built yet, in one pass over the documents. */
    void buildIndexes() {
        List<SecondaryIndex<P>> unbuilt = secondaryIndexes().stream().filter(index -> !index.isBuilt())
            .collect(Collectors.toList());
        if (unbuilt.isEmpty()) {
            return;
        }
        unbuilt.forEach(index -> index.startBuilding(positionOrder));
        storage.forEachDocument((position, document) -> unbuilt.forEach(index -> index.put(position, document)));
    }

    void put(P position, Document document) {
        for (Index<P> index : storage.getIndexes()) {
            if (index instanceof SecondaryIndex<P> secondary) {
                secondary.put(position, document);
            }
        }
    }

    void remove(P position) {
        for (Index<P> index : storage.getIndexes()) {
            if (index instanceof SecondaryIndex<P> secondary) {
                secondary.remove(position);
            }
        }
    }

    /** The positions of a unique index's entry when the query pins all its fields and has more; else null. */
    Iterable<P> pinnedPositions(Document query) {
        for (Index<P> index : storage.getIndexes()) {
            Document pinned = pinnedKeys(index.getKeys(), query);
            if (pinned != null && index.canHandle(pinned)) {
                return index.getPositions(pinned);
            }
        }
        return null;
    }

    /**
     * A query sorted on one field, with a limit and a range condition on that field: the stored
     * documents it returns (after skipping), in order, read by walking the field's index; else null.
     * Not for multikey indexes, whose documents sort by one element of several.
     */
    List<Document> orderedScan(Document query, Document orderBy, int numberToSkip, int numberToReturn) {
        if (orderBy == null || orderBy.size() != 1 || numberToReturn <= 0) {
            return null;
        }
        String field = orderBy.keySet().iterator().next();
        if (!(orderBy.get(field) instanceof Number direction) || direction.intValue() == 0) {
            return null;
        }
        SecondaryIndex.Bounds bounds = SecondaryIndex.bounds(query.get(field));
        boolean exists = bounds == null && existsTrue(query.get(field));
        if (!exists && (bounds == null || bounds.keys() != null)) {
            return null;
        }
        for (Index<P> index : storage.getIndexes()) {
            if (index instanceof SecondaryIndex<P> secondary && secondary.getKeys().get(0).getKey().equals(field)) {
                buildIndexes();
                if (secondary.isMultikey() || (exists && !secondary.coversExisting())) {
                    return null;
                }
                List<Document> matched = new ArrayList<>();
                int toSkip = numberToSkip;
                boolean ascending = direction.intValue() > 0;
                Iterator<Set<P>> sets = exists ? secondary.all(ascending) : secondary.inOrder(bounds, ascending);
                while (sets.hasNext() && matched.size() < numberToReturn) {
                    Set<P> tied = sets.next();
                    Iterator<P> positions = tied.iterator(); // in position order (SecondaryIndex)
                    // Stops at the limit inside a tie too: a batch's messages share one due time, and
                    // a claim of a few of them must not match (nor order) all the others.
                    while (positions.hasNext() && matched.size() < numberToReturn) {
                        Document document = storage.documentAt(positions.next());
                        if (document == null || !storage.matches(document, query)) {
                            continue;
                        }
                        if (toSkip > 0) {
                            toSkip--;
                        } else {
                            matched.add(document);
                        }
                    }
                }
                return matched;
            }
        }
        return null;
    }

    /** {@code {$exists: true}} (or a truthy value) and nothing else. */
    private static boolean existsTrue(Object condition) {
        if (!(condition instanceof Document operators) || operators.size() != 1) {
            return false;
        }
        Object value = operators.get("$exists");
        return value instanceof Boolean b ? b : value instanceof Number n && n.doubleValue() != 0;
    }

    /**
     * Candidates from the index that offers the fewest for a condition on a top-level field, or
     * null (scan). Key and {@code $in} lookups are counted first, as that is cheap; ranges are then
     * counted only up to the best count so far. A secondary index gives positions in scan order;
     * a unique index gives them in key order, as the library's own {@code $in} lookup (which this
     * replaces for a query of just that condition) and mongod do.
     */
    Plan<P> plan(Document query) {
        Index<P> best = null;
        SecondaryIndex.Bounds bestBounds = null;
        int bestCount = Integer.MAX_VALUE;
        for (boolean ranges : new boolean[] {false, true}) {
            for (Index<P> index : storage.getIndexes()) {
                String field = index.getKeys().get(0).getKey();
                SecondaryIndex.Bounds bounds = SecondaryIndex.bounds(query.get(field));
                if (bounds == null || (bounds.keys() == null) != ranges) {
                    continue;
                }
                int count;
                if (index instanceof SecondaryIndex<P> secondary) {
                    buildIndexes();
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
        if (best instanceof SecondaryIndex<P> secondary) {
            return new Plan<>(secondary.collect(bestBounds, positionOrder), query);
        }
        if (best == null) {
            return null;
        }
        // One lookup per key (the library's $in lookup drops keys its number comparison deems equal).
        String field = best.getKeys().get(0).getKey();
        List<Object> keys = new ArrayList<>(bestBounds.keys());
        keys.sort(SecondaryIndex.ORDER);
        Set<P> positions = new LinkedHashSet<>();
        for (Object key : keys) {
            best.getPositions(new Document(field, key)).forEach(positions::add);
        }
        // Exactly the documents whose _id (never an array) equals a listed one, as the matcher
        // compares: spare it comparing each candidate with the whole list.
        return new Plan<>(positions,
            bestBounds.in() && Objects.equals(field, storage.idField()) ? withoutIn(query, field) : query);
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

    /**
     * Sorts like the library's DocumentComparator, but looks each document's sort values up once
     * instead of at every comparison (its path lookups dominated sorting thousands of results).
     * Null when the order is not plain numbers (the library's comparator is kept then).
     */
    static Comparator<Document> sortComparator(Document orderBy) {
        if (orderBy == null || orderBy.isEmpty() || orderBy.keySet().iterator().next().equals("$natural")
            || !orderBy.values().stream().allMatch(Number.class::isInstance)) {
            return null;
        }
        List<String> keys = List.copyOf(orderBy.keySet());
        List<Comparator<Object>> order = orderBy.values().stream()
            .map(direction -> ((Number) direction).intValue() > 0 ? ValueComparator.asc() : ValueComparator.desc())
            .collect(Collectors.toList());
        Map<Document, Object[]> values = new IdentityHashMap<>();
        Function<Document, Object[]> sortValues = document -> values.computeIfAbsent(document,
            d -> keys.stream().map(key -> Utils.getSubdocumentValueCollectionAware(d, key)).toArray());
        return (document1, document2) -> {
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
}
