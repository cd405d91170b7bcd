package sms.smsc;

import java.io.IOException;
import java.io.InputStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A test SMSC (SMPP 3.4 server) on jsmpp, with an HTTP/JSON control port. See README.md.
 *
 * <pre>
 *   java -jar target/test-smsc.jar [--port 0] [--control-port 0] [--host 127.0.0.1]
 *        [--system-id test] [--password secret]
 *        [--receipt-delay-ms 100] [--answer-delay-ms 0] [--resend-unacked-ms 3000]
 *        [--enquire-link-ms 10000] [--max-tps 0] [--drop-receipts] [--no-receipt-tlvs]
 *        [--refuse-status 0] [--hang-after-submits 0] [--no-stdin-watch] [--pdu-file PATH]
 * </pre>
 *
 * Prints {@code test-smsc listening smpp=<port> control=<port>} on stdout once both listen. Exits
 * when stdin reaches EOF (so the JVM dies with its parent), or on SIGTERM/SIGINT.
 */
public final class Launcher {
    private Launcher() {
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
            System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        }
        // Answers to deliver_sm sent without jsmpp waiting for them ("No request with sequence_number
        // found") and clients going away are routine here; jsmpp logs them as warnings.
        for (String logger : List.of("org.jsmpp")) {
            String key = "org.slf4j.simpleLogger.log." + logger;
            if (System.getProperty(key) == null) {
                System.setProperty(key, "error");
            }
        }

        String host = "127.0.0.1";
        int port = 0;
        int controlPort = 0;
        String systemId = "test";
        String password = "secret";
        boolean watchStdin = true;
        Map<String, Object> settings = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--port" -> port = Integer.parseInt(value(args, ++i, arg));
                case "--control-port" -> controlPort = Integer.parseInt(value(args, ++i, arg));
                case "--host" -> host = value(args, ++i, arg);
                case "--system-id" -> systemId = value(args, ++i, arg);
                case "--password" -> password = value(args, ++i, arg);
                case "--receipt-delay-ms" -> settings.put("receiptDelayMs", Long.parseLong(value(args, ++i, arg)));
                case "--answer-delay-ms" -> settings.put("answerDelayMs", Long.parseLong(value(args, ++i, arg)));
                case "--resend-unacked-ms" -> settings.put("resendUnackedMs", Long.parseLong(value(args, ++i, arg)));
                case "--enquire-link-ms" -> settings.put("enquireLinkMs", Long.parseLong(value(args, ++i, arg)));
                case "--max-tps" -> settings.put("maxTps", Long.parseLong(value(args, ++i, arg)));
                case "--refuse-status" -> settings.put("refuseStatus", Long.decode(value(args, ++i, arg)));
                case "--hang-after-submits" -> settings.put("hangAfterSubmits", Long.parseLong(value(args, ++i, arg)));
                case "--drop-receipts" -> settings.put("dropReceipts", true);
                case "--no-receipt-tlvs" -> settings.put("receiptTlvs", false);
                case "--no-stdin-watch" -> watchStdin = false;
                // Read by PduLog when the Smsc below is made.
                case "--pdu-file" -> System.setProperty(PduLog.FILE_PROPERTY, value(args, ++i, arg));
                default -> {
                    System.err.println("test-smsc: unknown argument " + arg);
                    System.exit(2);
                }
            }
        }

        Config config = new Config();
        config.apply(settings);
        Smsc smsc = new Smsc(config, host, systemId, password);
        int smppPort = smsc.start(port);
        ControlServer control = new ControlServer(smsc);
        int boundControlPort = control.start(host, controlPort);

        CountDownLatch stopped = new CountDownLatch(1);
        AtomicBoolean stopping = new AtomicBoolean();
        Runnable stop = () -> {
            if (stopping.compareAndSet(false, true)) {
                control.stop();
                smsc.stop();
                stopped.countDown();
            }
        };
        Runtime.getRuntime().addShutdownHook(new Thread(stop, "test-smsc-shutdown"));

        System.out.println("test-smsc listening smpp=" + smppPort + " control=" + boundControlPort);
        System.out.flush();

        if (watchStdin) {
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
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                // Only EOF matters. A stdin that answers 0 bytes at once (non-blocking, or a
                // terminal-less parent) must not spin a core.
                if (n == 0) {
                    try {
                        Thread.sleep(200);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        } catch (IOException e) {
            // treat as closed
        }
    }

    private static String value(String[] args, int index, String name) {
        if (index >= args.length) {
            System.err.println("test-smsc: " + name + " needs a value");
            System.exit(2);
        }
        return args[index];
    }
}
