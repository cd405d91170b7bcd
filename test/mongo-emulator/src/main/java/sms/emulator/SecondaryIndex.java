package sms.emulator;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

import de.bwaldvogel.mongo.backend.EmptyIndex;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.ValueComparator;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.bson.ObjectId;

/**
 * A non-unique index, which the library accepts but never builds (memory and H2 backends alike). It
 * maps the values of the index's first field (each element of an array: multikey) to the positions
 * of the documents holding them (list indexes in memory, {@code _id} keys in H2), sorted like the
 * library's {@link ValueComparator} (see {@link #ORDER}). It lives in memory only: on the H2 backend
 * it is rebuilt from the stored documents when the store is opened, and the store stays the source
 * of truth.
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
 * removing a document needs no position from it); the emulator's collections keep it up to date
 * from their storage hooks, which know the positions (see {@link IndexedQueries}). Not thread-safe:
 * used only under the collection's lock. It is built on first use, because createIndexes does not
 * take that lock.
 */
final class SecondaryIndex<P> extends EmptyIndex<P> {

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
    private final NavigableMap<Object, Set<P>> positionsByKey = new TreeMap<>(ORDER);
    private final Map<P, List<Object>> keysByPosition = new HashMap<>();
    private boolean built;
    /**
     * The storage's scan order of positions, which every key's positions are kept in: a sorted
     * walk then meets a key's documents in the order a scan would (mongod's record order), without
     * sorting all of a large tie (a batch's due time) for a query that wants the first few.
     */
    private Comparator<? super P> positionOrder;
    /** Some document held an array in the field (it may still): its order is not the field's. */
    private boolean multikey;
    /** Documents that have the field but no key for it (null, a sub-document, another type...). */
    private final Set<P> unkeyed = new HashSet<>();

    SecondaryIndex(String name, List<IndexKey> keys) {
        super(name, keys);
        this.field = keys.get(0).getKey();
    }

    /**
     * Never empty to the library: it then adds the index without its build loop, which would read
     * every document twice to do nothing here (and, opening an H2 store, once per index). The
     * collection builds it ({@link IndexedQueries#buildIndexes}).
     */
    @Override
    public boolean isEmpty() {
        return false;
    }

    boolean isBuilt() {
        return built;
    }

    /** From now on {@link #put} indexes: the collection then puts every document it holds. */
    void startBuilding(Comparator<? super P> positionOrder) {
        this.positionOrder = positionOrder;
        built = true;
    }

    /** The document at position was added or replaced. */
    void put(P position, Document document) {
        if (!built) {
            return;
        }
        Object value = document.get(field);
        if (value instanceof Collection<?>) {
            multikey = true;
        }
        List<Object> keys = keysOf(value);
        if (keys.isEmpty() && document.containsKey(field)) {
            unkeyed.add(position);
        } else {
            unkeyed.remove(position);
        }
        List<Object> old = keys.isEmpty() ? keysByPosition.remove(position) : keysByPosition.put(position, keys);
        if (Objects.equals(old, keys)) {
            return;
        }
        unlink(position, old);
        for (Object key : keys) {
            positionsByKey.computeIfAbsent(key, k -> new TreeSet<>(positionOrder)).add(position);
        }
    }

    /** The document at position was removed. */
    void remove(P position) {
        if (built) {
            unkeyed.remove(position);
            unlink(position, keysByPosition.remove(position));
        }
    }

    private void unlink(P position, List<Object> keys) {
        if (keys == null) {
            return;
        }
        for (Object key : keys) {
            Set<P> positions = positionsByKey.get(key);
            if (positions != null && positions.remove(position) && positions.isEmpty()) {
                positionsByKey.remove(key);
            }
        }
    }

    /** How many positions {@link #collect} would add (counting a multikey document once per key), or more than limit. */
    int count(Bounds bounds, int limit) {
        int count = 0;
        for (Set<P> positions : (Iterable<Set<P>>) sets(bounds)::iterator) {
            count += positions.size();
            if (count > limit) {
                break;
            }
        }
        return count;
    }

    boolean isMultikey() {
        return multikey;
    }

    /**
     * Whether walking every key in order ({@link #all}) yields exactly the documents that have the
     * field ({@code $exists: true}) in the order a sort on it puts them: no document has the field
     * without a key, none held an array, and no key is a number (whose order here may differ from
     * the library's, see {@link #ORDER}; numbers come first, so the first key tells).
     */
    boolean coversExisting() {
        return !multikey && unkeyed.isEmpty()
            && (positionsByKey.isEmpty() || !(positionsByKey.firstKey() instanceof Number));
    }

    /** The position sets of every key, in key order (descending if not ascending), each in position order. */
    Iterator<Set<P>> all(boolean ascending) {
        return (ascending ? positionsByKey : positionsByKey.descendingMap()).values().iterator();
    }

    /**
     * The position sets of a range's keys, in key order (descending if not ascending): the range's
     * keys are all of the bound's type (see {@link #sets}), so this is the order a sort on the field
     * puts the matching documents in.
     */
    Iterator<Set<P>> inOrder(Bounds bounds, boolean ascending) {
        Object lower = bounds.lower();
        Object upper = bounds.upper();
        Object bound = lower != null ? lower : upper;
        NavigableMap<Object, Set<P>> range = lower != null && upper != null
            ? positionsByKey.subMap(lower, true, upper, true)
            : lower != null ? positionsByKey.tailMap(lower, true) : positionsByKey.headMap(upper, true);
        if (!ascending) {
            range = range.descendingMap();
        }
        return range.entrySet().stream()
            .dropWhile(entry -> entry.getKey().getClass() != bound.getClass())
            .takeWhile(entry -> entry.getKey().getClass() == bound.getClass())
            .map(Map.Entry::getValue)
            .iterator();
    }

    /** The positions of the documents the bounds select, each once, in the given (scan) order. */
    List<P> collect(Bounds bounds, Comparator<? super P> order) {
        Set<P> union = new HashSet<>();
        sets(bounds).forEach(union::addAll);
        List<P> positions = new ArrayList<>(union);
        positions.sort(order);
        return positions;
    }

    private Stream<Set<P>> sets(Bounds bounds) {
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
        NavigableMap<Object, Set<P>> side = lower != null
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
