package sms.emulator;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.stream.Collectors;

import io.netty.channel.Channel;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.oplog.Oplog;

/**
 * Starts mongo-java-server with an oplog (change streams) and a newer reported server version
 * than the library's newest enum value (5.0 / wire 8), because the Node driver v7 needs wire
 * version >= 9.
 *
 * <pre>
 *   java -jar target/mongo-emulator.jar [--port 0] [--host 127.0.0.1] [--data-dir DIR]
 *        [--server-version 7.0.0] [--wire-version 21]
 *        [--oplog-max-entries 100000] [--oplog-retention-seconds 3600]
 *        [--worker-threads 128] [--ttl-interval-seconds 10] [--no-stdin-watch]
 * </pre>
 *
 * Prints one line {@code MONGO_EMULATOR_READY port=N host=H backend=memory|h2 version=V wire=W}
 * on stdout once listening. Exits when stdin reaches EOF (so the JVM dies with its parent) or on
 * SIGTERM/SIGINT; the H2 store is closed (flushed) on the way out.
 *
 * Changes to the library: its oplog is replaced by {@link ChangeStreamOplog}; {@link Extensions}
 * adds hello, change events for findAndModify, awaitData getMores and postBatchResumeToken;
 * {@link EmulatorMemoryBackend} (in memory) and {@link EmulatorH2Backend} (with --data-dir) use
 * unique indexes for queries with more fields, build and use non-unique ones ({@link SecondaryIndex},
 * {@link IndexedQueries}; on H2 kept in memory and rebuilt from the store when it is opened) and hand
 * out snapshots instead of live documents; {@link TtlMonitor} expires TTL indexes. Commands run on netty event-loop threads, and a change stream's getMore
 * now waits there for new events, so the server gets many worker threads: netty hands connections
 * to them round-robin, and each connection then has a thread of its own, like mongod.
 */
public final class Launcher {

    private Launcher() {
    }

    /** A server version outside the library's ServerVersion enum (which stops at 5.0 / wire 8). */
    private record ReportedVersion(List<Integer> versionArray, int wireVersion) implements MongoVersion {
        @Override
        public List<Integer> getVersionArray() {
            return versionArray;
        }

        @Override
        public int getWireVersion() {
            return wireVersion;
        }
    }

    private static final class Options {
        String host = "127.0.0.1";
        int port = 0;
        Path dataDir;
        String serverVersion = "7.0.0";
        int wireVersion = 21;
        long oplogRetentionSeconds = 3600;
        int oplogMaxEntries = 100_000;
        int workerThreads = 128;
        long ttlIntervalSeconds = 10;
        boolean watchStdin = true;
    }

    public static void main(String[] args) throws Exception {
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        // A failed command is answered to the client with its error; the server's own stack trace for
        // it (duplicate keys, unsupported operators...) is noise. So is the library's warning that
        // non-unique indexes are not built (both backends here build them: SecondaryIndex).
        // Clients that go away without saying goodbye (reset connections) are noise too.
        for (String logger : List.of("de.bwaldvogel.mongo.wire.MongoWireProtocolHandler",
            "de.bwaldvogel.mongo.wire.MongoDatabaseHandler", "de.bwaldvogel.mongo.backend.AbstractMongoDatabase",
            "de.bwaldvogel.mongo.wire.MongoExceptionHandler", "de.bwaldvogel.mongo.MongoServer")) {
            String key = "org.slf4j.simpleLogger.log." + logger;
            if (System.getProperty(key) == null) {
                System.setProperty(key, "off");
            }
        }

        Options options = parse(args);
        PrintStream out = System.out;

        Extensions extensions = new Extensions(options.oplogMaxEntries, options.oplogRetentionSeconds);
        AtomicReference<Supplier<Set<String>>> databaseNames = new AtomicReference<>();
        MongoBackend backend;
        String backendName;
        if (options.dataDir != null) {
            Files.createDirectories(options.dataDir);
            backend = new EmulatorH2Backend(options.dataDir.resolve("mongo-emulator.mv").toString()) {
                {
                    databaseNames.set(this::listDatabaseNames);
                }

                @Override
                protected Oplog createOplog() {
                    return extensions.createOplog(this, getCursorRegistry());
                }

                @Override
                public Document handleCommand(Channel channel, String database, String command, Document query) {
                    return extensions.handleCommand(channel, database, command, query, super::handleCommand);
                }
            };
            backendName = "h2";
        } else {
            backend = new EmulatorMemoryBackend() {
                {
                    databaseNames.set(this::listDatabaseNames);
                }

                @Override
                protected Oplog createOplog() {
                    return extensions.createOplog(this, getCursorRegistry());
                }

                @Override
                public Document handleCommand(Channel channel, String database, String command, Document query) {
                    return extensions.handleCommand(channel, database, command, query, super::handleCommand);
                }
            };
            backendName = "memory";
        }
        List<Integer> versionArray = Arrays.stream(options.serverVersion.split("\\."))
            .map(Integer::valueOf)
            .collect(Collectors.toCollection(ArrayList::new));
        while (versionArray.size() < 3) {
            versionArray.add(0);
        }
        backend.version(new ReportedVersion(List.copyOf(versionArray), options.wireVersion));
        backend.enableOplog();

        MongoServer server = new MongoServer(backend);
        server.bind(new InetSocketAddress(options.host, options.port), 1, options.workerThreads);
        InetSocketAddress address = server.getLocalAddress();

        ScheduledExecutorService trimmer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "emulator-housekeeping");
            thread.setDaemon(true);
            return thread;
        });
        trimmer.scheduleWithFixedDelay(() -> {
            try {
                extensions.trimOplog();
            } catch (RuntimeException e) {
                System.err.println("mongo-emulator: oplog trim failed: " + e);
            }
        }, 1, 1, TimeUnit.SECONDS);

        TtlMonitor ttl = new TtlMonitor(backend, databaseNames.get(), extensions::oplog);
        trimmer.scheduleWithFixedDelay(() -> {
            try {
                ttl.run();
            } catch (RuntimeException e) {
                System.err.println("mongo-emulator: TTL pass failed: " + e);
            }
        }, options.ttlIntervalSeconds, options.ttlIntervalSeconds, TimeUnit.SECONDS);

        CountDownLatch stopped = new CountDownLatch(1);
        AtomicBoolean stopping = new AtomicBoolean();
        Runnable stop = () -> {
            if (!stopping.compareAndSet(false, true)) {
                return;
            }
            trimmer.shutdownNow();
            try {
                server.shutdownNow(); // stops listening, closes clients and the backend (H2: flushes the store)
            } catch (RuntimeException e) {
                System.err.println("mongo-emulator: error during shutdown: " + e);
            }
            stopped.countDown();
        };
        Runtime.getRuntime().addShutdownHook(new Thread(stop, "mongo-emulator-shutdown"));

        out.println("MONGO_EMULATOR_READY port=" + address.getPort() + " host=" + options.host
            + " backend=" + backendName + " version=" + options.serverVersion + " wire=" + options.wireVersion
            + (options.dataDir != null ? " dataDir=" + options.dataDir.toAbsolutePath() : ""));
        out.flush();

        if (options.watchStdin) {
            Thread watcher = new Thread(() -> {
                drain(System.in);
                System.exit(0); // runs the shutdown hook
            }, "stdin-watch");
            watcher.setDaemon(true);
            watcher.start();
        }
        stopped.await();
    }

    private static void drain(InputStream in) {
        byte[] buffer = new byte[256];
        try {
            while (in.read(buffer) >= 0) {
                // ignore input; only EOF matters
            }
        } catch (IOException e) {
            // treat as closed
        }
    }

    private static Options parse(String[] args) {
        Options options = new Options();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--port" -> options.port = Integer.parseInt(value(args, ++i, arg));
                case "--host" -> options.host = value(args, ++i, arg);
                case "--data-dir" -> options.dataDir = Path.of(value(args, ++i, arg));
                case "--server-version" -> options.serverVersion = value(args, ++i, arg);
                case "--wire-version" -> options.wireVersion = Integer.parseInt(value(args, ++i, arg));
                case "--oplog-retention-seconds" -> options.oplogRetentionSeconds = Long.parseLong(value(args, ++i, arg));
                case "--oplog-max-entries" -> options.oplogMaxEntries = Integer.parseInt(value(args, ++i, arg));
                case "--worker-threads" -> options.workerThreads = Integer.parseInt(value(args, ++i, arg));
                case "--ttl-interval-seconds" -> options.ttlIntervalSeconds = Long.parseLong(value(args, ++i, arg));
                case "--no-stdin-watch" -> options.watchStdin = false;
                default -> {
                    System.err.println("mongo-emulator: unknown argument " + arg);
                    System.exit(2);
                }
            }
        }
        return options;
    }

    private static String value(String[] args, int index, String name) {
        if (index >= args.length) {
            System.err.println("mongo-emulator: " + name + " needs a value");
            System.exit(2);
        }
        return args[index];
    }
}
