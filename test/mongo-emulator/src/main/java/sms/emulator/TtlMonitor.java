package sms.emulator;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.oplog.Oplog;

/**
 * The library accepts TTL indexes (expireAfterSeconds) but never expires anything. Like mongod's
 * TTL monitor, this deletes documents whose indexed date is older than expireAfterSeconds; the
 * deletions go through the oplog, so change streams see them as delete events.
 */
final class TtlMonitor {

    private final MongoBackend backend;
    private final Supplier<Set<String>> databaseNames;
    private final Supplier<Oplog> oplog;

    TtlMonitor(MongoBackend backend, Supplier<Set<String>> databaseNames, Supplier<Oplog> oplog) {
        this.backend = backend;
        this.databaseNames = databaseNames;
        this.oplog = oplog;
    }

    void run() {
        for (String databaseName : List.copyOf(databaseNames.get())) {
            if (databaseName.equals("local") || databaseName.equals("admin") || databaseName.equals("config")) {
                continue;
            }
            MongoDatabase database = backend.resolveDatabase(databaseName);
            MongoCollection<?> indexes = database.resolveCollection("system.indexes", false);
            if (indexes == null) {
                continue;
            }
            List<Document> ttlIndexes = new ArrayList<>();
            indexes.queryAllAsStream()
                .filter(index -> index.get("expireAfterSeconds") instanceof Number)
                .forEach(ttlIndexes::add);
            for (Document index : ttlIndexes) {
                if (!(index.get("key") instanceof Document key) || key.size() != 1 || !(index.get("ns") instanceof String ns)) {
                    continue;
                }
                String collectionName = ns.substring(ns.indexOf('.') + 1);
                MongoCollection<?> collection = database.resolveCollection(collectionName, false);
                if (collection == null) {
                    continue;
                }
                long seconds = ((Number) index.get("expireAfterSeconds")).longValue();
                String field = key.keySet().iterator().next();
                Instant cutoff = Instant.now().minusSeconds(seconds);
                collection.deleteDocuments(new Document(field, new Document("$lt", cutoff)), 0, oplog.get());
            }
        }
    }
}
