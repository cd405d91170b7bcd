package sms.emulator;

import java.time.Instant;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

import de.bwaldvogel.mongo.backend.EmptyIndex;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.ValueComparator;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.bson.ObjectId;

/**
 * A non-unique index for the in-memory backend, which the library accepts but never builds. It maps
 * the values of the index's first field (each element of an array: multikey) to the positions of the
 * documents holding them, sorted like the library's {@link ValueComparator} (see {@link #ORDER}).
 *
 * <p>It only selects candidates: the collection still checks each one with the library's matcher, so
 * the index must return a superset of the matches and nothing more. Hence it keeps only plain values
 * (numbers, strings, dates, ObjectIds, booleans), which are all an equality, {@code $in} or range
 * query with such a value can match in the library's matcher (its ranges only match values of the
 * bound's type, its equality compares normalized values); a document whose field is missing, null or
 * holds only other values has no entry, so sparse and non-sparse indexes hold the same. Ranges are
 * used for the other types but not for numbers: the library orders numbers inconsistently (NaN, and
 * integers beyond int range compare by truncated long value), so no sorted map can follow it.
 *
 * <p>To the library it stays an {@link EmptyIndex} (no positions, handles no query, "sparse" so that
 * removing a document needs no position from it); {@link EmulatorMemoryBackend}'s collection keeps
 * it up to date from its storage hooks, which know the positions. Not thread-safe: used only under
 * the collection's lock. It is built on first use, because createIndexes does not take that lock.
 */
final class SecondaryIndex extends EmptyIndex<Integer> {

    /**
     * What a query condition on the field asks for: {@code keys} (equality, or {@code $in} if
     * {@code in}), or else the range [{@code lower}, {@code upper}], open where null. Bounds are
     * inclusive even for {@code $lt/$gt}: the matcher decides, the index only has to include.
     */
    record Bounds(List<Object> keys, boolean in, Object lower, Object upper) {
    }

    /**
     * The library's order of values, but numbers by their double value: a total order, which the
     * library's number comparison is not. Numbers equal to the library's matcher (equal normalized
     * values) are equal here too, so equality lookups find them.
     */
    static final Comparator<Object> ORDER = (a, b) -> a instanceof Number x && b instanceof Number y
        ? Double.compare(x.doubleValue(), y.doubleValue())
        : ValueComparator.asc().compare(a, b);

    private final String field;
    private final NavigableMap<Object, Set<Integer>> positionsByKey = new TreeMap<>(ORDER);
    private final Map<Integer, List<Object>> keysByPosition = new HashMap<>();
    private boolean built;

    SecondaryIndex(String name, List<IndexKey> keys) {
        super(name, keys);
        this.field = keys.get(0).getKey();
    }

    /** Indexes the collection's documents (null where removed), once. */
    void build(List<Document> documents) {
        if (built) {
            return;
        }
        built = true;
        for (int position = 0; position < documents.size(); position++) {
            Document document = documents.get(position);
            if (document != null) {
                put(position, document);
            }
        }
    }

    /** The document at position was added or replaced. */
    void put(int position, Document document) {
        if (!built) {
            return;
        }
        List<Object> keys = keysOf(document.get(field));
        List<Object> old = keys.isEmpty() ? keysByPosition.remove(position) : keysByPosition.put(position, keys);
        if (Objects.equals(old, keys)) {
            return;
        }
        unlink(position, old);
        for (Object key : keys) {
            positionsByKey.computeIfAbsent(key, k -> new HashSet<>()).add(position);
        }
    }

    /** The document at position was removed. */
    void remove(int position) {
        if (built) {
            unlink(position, keysByPosition.remove(position));
        }
    }

    private void unlink(int position, List<Object> keys) {
        if (keys == null) {
            return;
        }
        for (Object key : keys) {
            Set<Integer> positions = positionsByKey.get(key);
            if (positions != null && positions.remove(position) && positions.isEmpty()) {
                positionsByKey.remove(key);
            }
        }
    }

    /** How many positions {@link #collect} would add (counting a multikey document once per key), or more than limit. */
    int count(Bounds bounds, int limit) {
        int count = 0;
        for (Set<Integer> positions : (Iterable<Set<Integer>>) sets(bounds)::iterator) {
            count += positions.size();
            if (count > limit) {
                break;
            }
        }
        return count;
    }

    void collect(Bounds bounds, BitSet into) {
        sets(bounds).forEach(positions -> positions.forEach(into::set));
    }

    private Stream<Set<Integer>> sets(Bounds bounds) {
        if (bounds.keys() != null) {
            return bounds.keys().stream().map(positionsByKey::get).filter(Objects::nonNull);
        }
        Object lower = bounds.lower();
        Object upper = bounds.upper();
        if (lower != null && upper != null) {
            return positionsByKey.subMap(lower, true, upper, true).values().stream();
        }
        // One-sided: the library's ranges only match values of the bound's type, which are adjacent in the map.
        Object bound = lower != null ? lower : upper;
        NavigableMap<Object, Set<Integer>> side = lower != null
            ? positionsByKey.tailMap(lower, true)
            : positionsByKey.headMap(upper, true).descendingMap();
        return side.entrySet().stream()
            .takeWhile(entry -> entry.getKey().getClass() == bound.getClass())
            .map(Map.Entry::getValue);
    }

    /**
     * What the index can contribute to a query's condition on its field, or null. Other operators in
     * the condition are further requirements the matcher checks; the ones used here are each
     * necessary, also for array values (the matcher wants one element to satisfy the condition).
     */
    static Bounds bounds(Object condition) {
        Object key = key(condition);
        if (key != null) {
            return new Bounds(List.of(key), false, null, null);
        }
        if (!(condition instanceof Document operators) || operators.isEmpty()
            || !operators.keySet().stream().allMatch(operator -> operator.startsWith("$"))) {
            return null; // missing, null, a sub-document or array to equal, a regular expression...
        }
        Object equal = key(operators.get("$eq"));
        if (equal != null) {
            return new Bounds(List.of(equal), false, null, null);
        }
        if (operators.get("$in") instanceof Collection<?> values) {
            List<Object> keys = new ArrayList<>(values.size());
            for (Object value : values) {
                keys.add(key(value));
            }
            if (!keys.contains(null)) { // null, regular expressions and arrays match differently
                return new Bounds(keys, true, null, null);
            }
        }
        Object lower = rangeKey(operators.containsKey("$gt") ? operators.get("$gt") : operators.get("$gte"));
        Object upper = rangeKey(operators.containsKey("$lt") ? operators.get("$lt") : operators.get("$lte"));
        if (lower != null && upper != null) {
            if (lower.getClass() != upper.getClass()) {
                lower = null; // no value compares with both; the upper bound alone is still a superset
            } else if (ORDER.compare(lower, upper) > 0) {
                return new Bounds(List.of(), false, null, null);
            }
        }
        return lower == null && upper == null ? null : new Bounds(null, false, lower, upper);
    }

    /** The field's keys: its value, or each element of an array, that {@link #key} takes. */
    private static List<Object> keysOf(Object value) {
        if (value instanceof Collection<?> elements) {
            List<Object> keys = new ArrayList<>(elements.size());
            for (Object element : elements) {
                Object key = key(element);
                if (key != null) {
                    keys.add(key);
                }
            }
            return keys;
        }
        Object key = key(value);
        return key == null ? List.of() : List.of(key);
    }

    /**
     * A plain value as the library normalizes it for equality (numbers as doubles, longs beyond a
     * double's precision as they are; its {@code Utils.normalizeValue} is package-private), or null.
     */
    private static Object key(Object value) {
        if (value instanceof Long number && number != (long) number.doubleValue()) {
            return number;
        }
        if (value instanceof Number number) {
            double normalized = number.doubleValue();
            return normalized == 0 ? 0.0 : normalized; // -0.0 equals 0.0
        }
        if (value instanceof String || value instanceof Instant || value instanceof ObjectId || value instanceof Boolean) {
            return value;
        }
        return null;
    }

    /** A range bound the index can serve: a {@link #key}, but no number (see the class comment). */
    private static Object rangeKey(Object value) {
        return value instanceof Number ? null : key(value);
    }
}
