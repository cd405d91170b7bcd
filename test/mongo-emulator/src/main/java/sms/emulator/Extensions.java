package sms.emulator;

import java.util.List;

import io.netty.channel.Channel;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.backend.Cursor;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.bson.Document;

/**
 * Command-level additions to mongo-java-server, shared by the memory and H2 backends:
 * <ul>
 * <li>{@code hello} (the library only knows the legacy {@code isMaster});</li>
 * <li>change events for {@code findAndModify} (the library records none), written under the
 * collection's lock so they are ordered with the collection's other writes;</li>
 * <li>{@code findAndModify} answers with a copy of the document taken under that lock, not the
 * stored document the next update changes in place (two concurrent {@code $inc} on the H2 store
 * both answered the later value);</li>
 * <li>getMore on change streams waits for new events (awaitData) instead of answering at once;</li>
 * <li>{@code postBatchResumeToken} on change stream batches, so a driver has a resume token while idle.</li>
 * </ul>
 */
final class Extensions {

    interface CommandHandler {
        Document handle(Channel channel, String database, String command, Document query);
    }

    private static final long DEFAULT_AWAIT_MILLIS = 1_000;

    private final int oplogMaxEntries;
    private final long oplogRetentionSeconds;
    private volatile ChangeStreamOplog oplog;
    private volatile CursorRegistry cursorRegistry;

    Extensions(int oplogMaxEntries, long oplogRetentionSeconds) {
        this.oplogMaxEntries = oplogMaxEntries;
        this.oplogRetentionSeconds = oplogRetentionSeconds;
    }

    ChangeStreamOplog createOplog(MongoBackend backend, CursorRegistry registry) {
        cursorRegistry = registry;
        oplog = new ChangeStreamOplog(backend, registry, oplogMaxEntries, oplogRetentionSeconds);
        return oplog;
    }

    ChangeStreamOplog oplog() {
        return oplog;
    }

    void trimOplog() {
        ChangeStreamOplog current = oplog;
        if (current != null) {
            current.trim();
        }
    }

    Document handleCommand(Channel channel, String database, String command, Document query, CommandHandler next) {
        ChangeStreamOplog current = oplog;
        switch (command) {
            case "hello":
                return hello(channel, database, query, next);
            case "getMore": {
                ChangeStreamOplog.ChangeStreamCursor cursor = changeStreamCursor(query.get("getMore"));
                if (cursor == null) {
                    return next.handle(channel, database, command, query);
                }
                long await = query.get("maxTimeMS") instanceof Number n && n.longValue() > 0 ? n.longValue() : DEFAULT_AWAIT_MILLIS;
                ChangeStreamOplog.AWAIT_MILLIS.set(await);
                try {
                    return withResumeToken(next.handle(channel, database, command, query), cursor);
                } finally {
                    ChangeStreamOplog.AWAIT_MILLIS.remove();
                }
            }
            case "aggregate": {
                Document response = next.handle(channel, database, command, query);
                if (response.get("cursor") instanceof Document cursor) {
                    ChangeStreamOplog.ChangeStreamCursor changeStream = changeStreamCursor(cursor.get("id"));
                    if (changeStream != null) {
                        withResumeToken(response, changeStream);
                    }
                }
                return response;
            }
            case "killCursors": {
                if (query.get("cursors") instanceof List<?> ids) {
                    for (Object id : ids) {
                        ChangeStreamOplog.ChangeStreamCursor cursor = changeStreamCursor(id);
                        if (cursor != null) {
                            cursor.close();
                        }
                    }
                }
                return next.handle(channel, database, command, query);
            }
            case "insert":
            case "update":
            case "delete":
                if (current != null && query.get(command) instanceof String collection) {
                    current.remember(database, collection); // so the oplog can look documents up cheaply
                }
                return next.handle(channel, database, command, query);
            case "dropDatabase":
                if (current != null) {
                    current.forgetDatabase(database);
                }
                return next.handle(channel, database, command, query);
            default:
                if (current != null && command.equalsIgnoreCase("findAndModify") && query.get(command) instanceof String collection) {
                    return findAndModify(current, channel, database, command, collection, query, next);
                }
                return next.handle(channel, database, command, query);
        }
    }

    private Document hello(Channel channel, String database, Document query, CommandHandler next) {
        Document response = next.handle(channel, database, "isMaster", query);
        Document hello = new Document();
        hello.put("isWritablePrimary", response.getOrDefault("ismaster", Boolean.TRUE));
        response.forEach((key, value) -> {
            if (!"ismaster".equals(key)) {
                hello.put(key, value);
            }
        });
        return hello;
    }

    private ChangeStreamOplog.ChangeStreamCursor changeStreamCursor(Object id) {
        CursorRegistry registry = cursorRegistry;
        if (registry == null || !(id instanceof Number number) || number.longValue() == 0) {
            return null;
        }
        try {
            Cursor cursor = registry.getCursor(number.longValue());
            return cursor instanceof ChangeStreamOplog.ChangeStreamCursor changeStream ? changeStream : null;
        } catch (RuntimeException e) {
            return null; // unknown cursor: let the library answer
        }
    }

    private static Document withResumeToken(Document response, ChangeStreamOplog.ChangeStreamCursor cursor) {
        if (response.get("cursor") instanceof Document cursorDocument) {
            cursorDocument.put("postBatchResumeToken", new Document("_data", cursor.resumeToken()));
        }
        return response;
    }

    private Document findAndModify(ChangeStreamOplog oplog, Channel channel, String database, String command,
                                   String collectionName, Document query, CommandHandler next) {
        String[] ns = {database, collectionName};
        // Make sure the response carries _id, so the event can name the document.
        boolean stripId = false;
        if (query.get("fields") instanceof Document fields && fields.containsKey("_id")
            && !isTruthy(fields.get("_id"))) {
            Document withId = fields.clone();
            withId.remove("_id");
            query.put("fields", withId);
            stripId = true;
        }
        boolean projected = query.get("fields") instanceof Document fields && !fields.isEmpty();

        MongoCollection<?> collection = oplog.remember(database, collectionName);
        Object lock = collection != null ? collection : new Object();
        Document response;
        synchronized (lock) { // the lock the library's synchronized collection methods take
            boolean remove = isTruthy(query.get("remove"));
            boolean returnNew = isTruthy(query.get("new"));
            // The library answers an upsert without lastErrorObject, and with new: false without the
            // document either; to name the inserted document, find out first whether one will be.
            boolean upsert = !remove && isTruthy(query.get("upsert"));
            boolean willInsert = upsert && !matchesAny(collection, query.get("query"));
            if (willInsert && !returnNew) {
                query.put("new", Boolean.TRUE);
            }
            response = next.handle(channel, database, command, query);
            // The library answers with the stored document itself, which the next update changes
            // in place, possibly before this answer is written (H2 store): answer with a copy
            // taken under the lock, or two concurrent $inc calls may both read the later value.
            if (response.get("value") instanceof Document live) {
                response.put("value", live.cloneDeeply());
            }
            Object value = response.get("value");
            Document lastError = response.get("lastErrorObject") instanceof Document d ? d : null;
            if (remove) {
                if (value instanceof Document removed) {
                    oplog.recordDelete(ns, removed.get("_id"));
                }
            } else if (willInsert && lastError == null && value instanceof Document inserted) {
                Object id = inserted.get("_id");
                oplog.recordInsert(ns, id, oplog.lookup(ns, id));
                response.put("lastErrorObject", new Document("n", 1).append("updatedExisting", Boolean.FALSE)
                    .append("upserted", id));
                if (!returnNew) {
                    query.put("new", Boolean.FALSE);
                    response.put("value", null);
                }
            } else if (lastError != null && isTruthy(lastError.get("updatedExisting")) && value instanceof Document found) {
                Object id = found.get("_id");
                Document postImage = oplog.lookup(ns, id);
                boolean unchanged = !returnNew && !projected && postImage != null && postImage.equals(found);
                if (!unchanged) {
                    oplog.recordUpdate(ns, id, query.get("update"), postImage);
                }
            }
        }
        if (stripId && response.get("value") instanceof Document value) {
            value.remove("_id");
        }
        return response;
    }

    private static boolean matchesAny(MongoCollection<?> collection, Object filter) {
        if (collection == null) {
            return false;
        }
        Document query = filter instanceof Document d ? d : new Document();
        return collection.handleQuery(query, 0, 1).iterator().hasNext();
    }

    private static boolean isTruthy(Object value) {
        if (value == null) {
            return false;
        }
        if (value instanceof Boolean b) {
            return b;
        }
        if (value instanceof Number n) {
            return n.doubleValue() != 0;
        }
        return true;
    }
}
