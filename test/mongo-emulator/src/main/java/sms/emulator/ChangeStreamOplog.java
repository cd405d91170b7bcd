package sms.emulator;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.AbstractCursor;
import de.bwaldvogel.mongo.backend.Cursor;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.aggregation.Aggregation;
import de.bwaldvogel.mongo.bson.BsonTimestamp;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.MongoServerError;
import de.bwaldvogel.mongo.oplog.Oplog;

/**
 * Replacement for the library's CollectionBackedOplog, which scans (and deep-copies) the whole
 * oplog on every getMore, answers getMore at once even when empty (so drivers poll in a tight
 * loop), filters database-level streams out, and leaves ns, wallTime and updateDescription out of
 * events.
 *
 * This one keeps the oplog in memory, ordered by timestamp, trimmed by count and age; getMore
 * reads only entries after the cursor's position and waits (up to the getMore's maxTimeMS, default
 * 1 s) for new entries, like mongod's awaitData. Events follow MongoDB's change event format:
 * _id (resume token), operationType (insert, update, replace, delete, drop, invalidate),
 * clusterTime, wallTime, ns, documentKey, fullDocument (inserts, replaces, and updates with
 * fullDocument: "updateLookup"), updateDescription (updatedFields with post-update values of the
 * touched paths, removedFields, truncatedArrays: []).
 *
 * Not kept across restarts: a resume token older than the retained history fails with
 * ChangeStreamHistoryLost (286), as on a mongod whose oplog has rolled over.
 */
final class ChangeStreamOplog implements Oplog {

    private static final int MAX_SCANNED_PER_BATCH = 10_000;
    private static final int DEFAULT_BATCH_LIMIT = 1_000;

    /** Milliseconds a getMore on the current thread may wait for new entries; set around getMore. */
    static final ThreadLocal<Long> AWAIT_MILLIS = ThreadLocal.withInitial(() -> 0L);

    private record Entry(long ts, Instant wall, String op, String db, String coll, Object id, Document document,
                         Document updatedFields, List<String> removedFields) {
    }

    private final MongoBackend backend;
    private final CursorRegistry cursorRegistry;
    private final int maxEntries;
    private final long retentionSeconds;

    private final ConcurrentSkipListMap<Long, Entry> entries = new ConcurrentSkipListMap<>();
    private final AtomicInteger size = new AtomicInteger();
    private final Object appendLock = new Object();
    private long lastTs;
    /** Entries with a smaller timestamp may have existed but are gone (before start, or trimmed). */
    private volatile long historyFloor;

    private final ReentrantLock signalLock = new ReentrantLock();
    private final Condition appended = signalLock.newCondition();
    private final AtomicInteger waiters = new AtomicInteger();
    private volatile long version;

    /** Collections by namespace, resolved outside collection locks (see {@link #remember}). */
    private final Map<String, MongoCollection<?>> collections = new ConcurrentHashMap<>();

    ChangeStreamOplog(MongoBackend backend, CursorRegistry cursorRegistry, int maxEntries, long retentionSeconds) {
        this.backend = backend;
        this.cursorRegistry = cursorRegistry;
        this.maxEntries = maxEntries;
        this.retentionSeconds = retentionSeconds;
        synchronized (appendLock) {
            // Above every timestamp an earlier run (same data directory) handed out, so its resume
            // tokens are recognised as history lost.
            lastTs = clockTs();
            historyFloor = lastTs + 1;
        }
    }

    // ----------------------------------------------------------------------------------------
    // recording

    @Override
    public void handleInsert(String namespace, List<Document> documents) {
        String[] ns = split(namespace);
        if (!recorded(ns)) {
            return;
        }
        for (Document document : documents) {
            append("insert", ns, document.get("_id"), document.cloneDeeply(), null, null);
        }
    }

    @Override
    public void handleUpdate(String namespace, Document selector, Document update, List<Object> modifiedIds) {
        String[] ns = split(namespace);
        if (!recorded(ns)) {
            return;
        }
        MongoCollection<?> collection = remember(ns[0], ns[1]);
        for (Object id : modifiedIds) {
            // A published snapshot is never modified: its values are copied only when an event is read.
            if (collection instanceof PublishedDocuments snapshots) {
                recordUpdate(ns, id, update, snapshots.published(id), false);
            } else {
                recordUpdate(ns, id, update, lookup(ns, id), true);
            }
        }
    }

    /** Records an update (or replacement, when the update has no operators) of document id. */
    void recordUpdate(String[] ns, Object id, Object update, Document postImage) {
        recordUpdate(ns, id, update, postImage, true);
    }

    /** With {@code copy} false, the post-image must never change (its values are kept, not copied). */
    void recordUpdate(String[] ns, Object id, Object update, Document postImage, boolean copy) {
        if (!(update instanceof Document updateDocument)) {
            return; // pipeline updates are not supported by the emulator
        }
        boolean replacement = updateDocument.keySet().stream().noneMatch(k -> k.startsWith("$"));
        if (replacement) {
            append("replace", ns, id, postImage == null ? updateDocument.cloneDeeply() : postImage, null, null);
            return;
        }
        Document updatedFields = new Document();
        List<String> removedFields = new ArrayList<>();
        for (Map.Entry<String, Object> operator : updateDocument.entrySet()) {
            if (!(operator.getValue() instanceof Document spec)) {
                continue;
            }
            switch (operator.getKey()) {
                case "$setOnInsert" -> {
                }
                case "$unset" -> spec.keySet().forEach(path -> removedFields.add(withoutPositional(path)));
                case "$rename" -> spec.forEach((from, to) -> {
                    removedFields.add(from);
                    addUpdatedField(updatedFields, postImage, String.valueOf(to), copy);
                });
                default -> spec.keySet().forEach(path -> addUpdatedField(updatedFields, postImage, path, copy));
            }
        }
        append("update", ns, id, null, updatedFields, removedFields);
    }

    void recordInsert(String[] ns, Object id, Document document) {
        if (recorded(ns) && document != null) {
            append("insert", ns, id, document, null, null);
        }
    }

    void recordDelete(String[] ns, Object id) {
        if (recorded(ns)) {
            append("delete", ns, id, null, null, null);
        }
    }

    @Override
    public void handleDelete(String namespace, Document query, List<Object> deletedIds) {
        String[] ns = split(namespace);
        if (!recorded(ns)) {
            return;
        }
        for (Object id : deletedIds) {
            append("delete", ns, id, null, null, null);
        }
    }

    @Override
    public void handleDropCollection(String namespace) {
        String[] ns = split(namespace);
        collections.remove(namespace);
        if (recorded(ns)) {
            append("drop", ns, null, null, null, null);
        }
    }

    private static boolean recorded(String[] ns) {
        String db = ns[0];
        return !(db.equals("local") || db.equals("admin") || db.equals("config") || ns[1].startsWith("system."));
    }

    private void append(String op, String[] ns, Object id, Document document, Document updatedFields,
                        List<String> removedFields) {
        synchronized (appendLock) {
            long ts = nextTs();
            entries.put(ts, new Entry(ts, Instant.now(), op, ns[0], ns[1], id, document, updatedFields, removedFields));
            size.incrementAndGet();
            version = ts;
        }
        if (waiters.get() > 0) {
            signalLock.lock();
            try {
                appended.signalAll();
            } finally {
                signalLock.unlock();
            }
        }
    }

    /**
     * Strictly increasing timestamps: wall-clock seconds in the high half (BSON timestamp "t"), and
     * in the low half ("i") the millisecond shifted left by 22 bits plus a counter, so a later run
     * starts above an earlier one even within the same second.
     */
    private long nextTs() {
        lastTs = Math.max(lastTs + 1, clockTs());
        return lastTs;
    }

    private static long clockTs() {
        Instant now = Instant.now();
        return (now.getEpochSecond() << 32) | ((long) (now.getNano() / 1_000_000) << 22);
    }

    private long currentTs() {
        synchronized (appendLock) {
            return lastTs;
        }
    }

    void trim() {
        Instant cutoff = Instant.now().minusSeconds(retentionSeconds);
        while (true) {
            Map.Entry<Long, Entry> first = entries.firstEntry();
            if (first == null) {
                return;
            }
            if (size.get() <= maxEntries && !first.getValue().wall().isBefore(cutoff)) {
                return;
            }
            if (entries.remove(first.getKey()) != null) {
                size.decrementAndGet();
                historyFloor = first.getKey() + 1;
            }
        }
    }

    // ----------------------------------------------------------------------------------------
    // collection lookups

    /** Resolves and caches a collection; call outside collection locks (the database lock is taken). */
    MongoCollection<?> remember(String databaseName, String collectionName) {
        String namespace = databaseName + "." + collectionName;
        MongoCollection<?> collection = collections.get(namespace);
        if (collection == null) {
            MongoDatabase database = backend.resolveDatabase(databaseName);
            collection = database.resolveCollection(collectionName, false);
            if (collection != null) {
                collections.put(namespace, collection);
            }
        }
        return collection;
    }

    void forgetDatabase(String databaseName) {
        collections.keySet().removeIf(namespace -> namespace.startsWith(databaseName + "."));
    }

    Document lookup(String[] ns, Object id) {
        MongoCollection<?> collection = remember(ns[0], ns[1]);
        if (collection == null || id == null) {
            return null;
        }
        for (Document document : collection.handleQuery(new Document("_id", id))) {
            return document.cloneDeeply();
        }
        return null;
    }

    // ----------------------------------------------------------------------------------------
    // cursors

    @Override
    public Cursor createCursor(Document changeStream, String namespace, Aggregation aggregation) {
        String[] ns = split(namespace);
        // db.watch() arrives as "aggregate: 1", i.e. collection "1"
        String collection = ns[1].equals("1") ? null : ns[1];
        String fullDocument = String.valueOf(changeStream.getOrDefault("fullDocument", "default"));
        boolean lookup = !fullDocument.equals("default");

        long position;
        Object startAfter = changeStream.get("startAfter");
        Object resumeAfter = changeStream.get("resumeAfter");
        Object startAtOperationTime = changeStream.get("startAtOperationTime");
        if (startAfter != null || resumeAfter != null) {
            long token = parseToken(startAfter != null ? startAfter : resumeAfter);
            if (token < historyFloor - 1) {
                throw new MongoServerError(286, "ChangeStreamHistoryLost",
                    "Resume of change stream was not possible, as the resume point may no longer be in the oplog "
                        + "(the emulator keeps its oplog in memory, bounded, and not across restarts)");
            }
            position = token;
        } else if (startAtOperationTime instanceof BsonTimestamp timestamp) {
            if (timestamp.getValue() < historyFloor) {
                throw new MongoServerError(286, "ChangeStreamHistoryLost",
                    "startAtOperationTime is older than the emulator's retained oplog");
            }
            position = timestamp.getValue() - 1;
        } else {
            position = currentTs();
        }

        ChangeStreamCursor cursor = new ChangeStreamCursor(cursorRegistry.generateCursorId(), ns[0], collection,
            lookup, aggregation, position);
        cursorRegistry.add(cursor);
        return cursor;
    }

    private static long parseToken(Object token) {
        if (token instanceof Document document && document.get("_data") instanceof String data && data.length() == 16) {
            try {
                return HexFormat.fromHexDigitsToLong(data);
            } catch (IllegalArgumentException e) {
                // fall through
            }
        }
        throw new MongoServerError(260, "InvalidResumeToken", "Invalid resume token: " + token);
    }

    static String token(long ts) {
        return HexFormat.of().withUpperCase().formatHex(new byte[] {
            (byte) (ts >>> 56), (byte) (ts >>> 48), (byte) (ts >>> 40), (byte) (ts >>> 32),
            (byte) (ts >>> 24), (byte) (ts >>> 16), (byte) (ts >>> 8), (byte) ts});
    }

    private boolean awaitAppend(long seenVersion, long deadlineNanos) throws InterruptedException {
        waiters.incrementAndGet();
        signalLock.lock();
        try {
            while (version == seenVersion) {
                long remaining = deadlineNanos - System.nanoTime();
                if (remaining <= 0) {
                    return false;
                }
                appended.awaitNanos(remaining);
            }
            return true;
        } finally {
            signalLock.unlock();
            waiters.decrementAndGet();
        }
    }

    void wakeAll() {
        signalLock.lock();
        try {
            appended.signalAll();
        } finally {
            signalLock.unlock();
        }
    }

    final class ChangeStreamCursor extends AbstractCursor {
        private final String db;
        private final String collection;
        private final boolean lookup;
        private final Aggregation aggregation;
        private volatile long position;
        private volatile boolean closed;
        private boolean invalidatePending;
        private boolean exhausted;

        ChangeStreamCursor(long id, String db, String collection, boolean lookup, Aggregation aggregation, long position) {
            super(id);
            this.db = db;
            this.collection = collection;
            this.lookup = lookup;
            this.aggregation = aggregation;
            this.position = position;
        }

        String resumeToken() {
            return token(position);
        }

        void close() {
            closed = true;
            wakeAll();
        }

        @Override
        public boolean isEmpty() {
            return exhausted;
        }

        @Override
        public synchronized List<Document> takeDocuments(int numberToReturn) {
            int limit = numberToReturn > 0 ? numberToReturn : DEFAULT_BATCH_LIMIT;
            long awaitMillis = AWAIT_MILLIS.get();
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(awaitMillis);
            while (true) {
                long seen = version;
                List<Document> batch = scan(limit);
                if (!batch.isEmpty() || awaitMillis <= 0 || closed || exhausted) {
                    return batch;
                }
                try {
                    if (!awaitAppend(seen, deadline)) {
                        return batch;
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return batch;
                }
            }
        }

        private List<Document> scan(int limit) {
            List<Document> batch = new ArrayList<>();
            if (invalidatePending) {
                invalidatePending = false;
                exhausted = true;
                batch.add(new Document("_id", new Document("_data", token(position + 1)))
                    .append("operationType", "invalidate")
                    .append("clusterTime", new BsonTimestamp(position))
                    .append("wallTime", Instant.now()));
                return batch;
            }
            if (position < historyFloor - 1) {
                throw new MongoServerError(286, "ChangeStreamHistoryLost",
                    "the change stream fell behind the emulator's retained oplog");
            }
            int scanned = 0;
            for (Entry entry : entries.tailMap(position, false).values()) {
                scanned++;
                position = entry.ts();
                if (entry.db().equals(db) && (collection == null || entry.coll().equals(collection))) {
                    Document event = toEvent(entry);
                    List<Document> out = aggregation.runStages(Stream.of(event));
                    batch.addAll(out);
                    if (entry.op().equals("drop") && collection != null) {
                        invalidatePending = true;
                        break;
                    }
                }
                if (batch.size() >= limit || scanned >= MAX_SCANNED_PER_BATCH) {
                    break;
                }
            }
            return batch;
        }

        private Document toEvent(Entry entry) {
            Document event = new Document("_id", new Document("_data", token(entry.ts())))
                .append("operationType", entry.op())
                .append("clusterTime", new BsonTimestamp(entry.ts()))
                .append("wallTime", entry.wall());
            String[] ns = {entry.db(), entry.coll()};
            switch (entry.op()) {
                case "insert", "replace" -> event.append("fullDocument", entry.document().cloneDeeply());
                case "update" -> {
                    if (lookup) {
                        event.append("fullDocument", lookup(ns, entry.id()));
                    }
                }
                default -> {
                }
            }
            event.append("ns", new Document("db", entry.db()).append("coll", entry.coll()));
            if (!entry.op().equals("drop")) {
                event.append("documentKey", new Document("_id", entry.id()));
            }
            if (entry.op().equals("update")) {
                event.append("updateDescription", new Document("updatedFields", entry.updatedFields().cloneDeeply())
                    .append("removedFields", new ArrayList<>(entry.removedFields()))
                    .append("truncatedArrays", new ArrayList<>()));
            }
            return event;
        }
    }

    // ----------------------------------------------------------------------------------------
    // helpers

    static String[] split(String namespace) {
        int dot = namespace.indexOf('.');
        return new String[] {namespace.substring(0, dot), namespace.substring(dot + 1)};
    }

    /** "a.$[x].b" and "a.$.b" become "a": the whole array is reported as updated. */
    private static String withoutPositional(String path) {
        String[] parts = path.split("\\.");
        StringBuilder result = new StringBuilder();
        for (String part : parts) {
            if (part.startsWith("$")) {
                break;
            }
            if (!result.isEmpty()) {
                result.append('.');
            }
            result.append(part);
        }
        return result.toString();
    }

    private static void addUpdatedField(Document updatedFields, Document postImage, String path, boolean copy) {
        String reported = withoutPositional(path);
        if (reported.isEmpty() || postImage == null) {
            return;
        }
        Object value = valueAt(postImage, reported);
        if (value != MISSING) {
            updatedFields.put(reported, copy ? cloneValue(value) : value);
        }
    }

    private static final Object MISSING = new Object();

    private static Object valueAt(Document document, String path) {
        Object current = document;
        for (String part : path.split("\\.")) {
            if (current instanceof Document d) {
                if (!d.containsKey(part)) {
                    return MISSING;
                }
                current = d.get(part);
            } else if (current instanceof List<?> list) {
                try {
                    int index = Integer.parseInt(part);
                    if (index < 0 || index >= list.size()) {
                        return MISSING;
                    }
                    current = list.get(index);
                } catch (NumberFormatException e) {
                    return MISSING;
                }
            } else {
                return MISSING;
            }
        }
        return current;
    }

    private static Object cloneValue(Object value) {
        if (value instanceof Document d) {
            return d.cloneDeeply();
        }
        if (value instanceof List<?> list) {
            return new Document("v", list).cloneDeeply().get("v");
        }
        return value;
    }
}
