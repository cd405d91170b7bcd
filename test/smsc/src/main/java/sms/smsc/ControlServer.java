package sms.smsc;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.stream.Collectors;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonParseException;
import com.google.gson.reflect.TypeToken;
import com.google.gson.stream.JsonWriter;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * The HTTP/JSON control interface (see README.md):
 * GET|POST /config, GET /pdus[?since=N][&command=a,b], POST /reset, POST /mo, GET /mo, POST /mo/bulk, GET /binds,
 * GET /receipts, POST /unbind, POST /drop, GET /health.
 */
final class ControlServer {
    private static final Gson GSON = new GsonBuilder().serializeNulls().disableHtmlEscaping().create();

    private final Smsc smsc;
    private HttpServer server;

    ControlServer(Smsc smsc) {
        this.smsc = smsc;
    }

    int start(String host, int port) throws IOException {
        server = HttpServer.create(new InetSocketAddress(host, port), 64);
        server.setExecutor(Executors.newFixedThreadPool(4, r -> {
            Thread t = new Thread(r, "smsc-control");
            t.setDaemon(true);
            return t;
        }));
        server.createContext("/", this::handle);
        server.start();
        return server.getAddress().getPort();
    }

    void stop() {
        if (server != null) {
            server.stop(0);
        }
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            String method = exchange.getRequestMethod();
            String path = exchange.getRequestURI().getPath();
            Map<String, String> query = query(exchange.getRequestURI().getRawQuery());
            try {
                switch (method + " " + path) {
                    case "GET /health" -> json(exchange, 200, Map.of("ok", true));
                    case "GET /config" -> json(exchange, 200, smsc.config.toMap());
                    case "POST /config" -> {
                        smsc.config.apply(body(exchange));
                        json(exchange, 200, smsc.config.toMap());
                    }
                    case "GET /pdus" -> pdus(exchange, query);
                    case "POST /reset" -> {
                        smsc.reset();
                        json(exchange, 200, Map.of("ok", true));
                    }
                    case "POST /mo" -> {
                        try {
                            json(exchange, 200, smsc.mo.send(MoSender.request(body(exchange))));
                        } catch (IllegalStateException e) {
                            json(exchange, 409, Map.of("error", e.getMessage()));
                        }
                    }
                    case "GET /mo" -> json(exchange, 200, smsc.mo.tracked());
                    case "POST /mo/bulk" -> {
                        try {
                            json(exchange, 200, smsc.bulkMo.run(body(exchange)));
                        } catch (IllegalStateException e) {
                            json(exchange, 409, Map.of("error", e.getMessage()));
                        }
                    }
                    case "GET /binds" -> json(exchange, 200, smsc.binds());
                    case "GET /receipts" -> json(exchange, 200, smsc.pendingReceipts());
                    case "POST /unbind", "POST /drop" -> {
                        Map<String, Object> b = body(exchange);
                        Integer bind = b.get("bind") instanceof Number n ? n.intValue() : null;
                        json(exchange, 200, Map.of("binds", smsc.disconnect(bind, path.equals("/drop"))));
                    }
                    default -> json(exchange, 404, Map.of("error", "no " + method + " " + path));
                }
            } catch (IllegalArgumentException | JsonParseException | ClassCastException e) {
                json(exchange, 400, Map.of("error", String.valueOf(e.getMessage())));
            } catch (Exception e) {
                json(exchange, 500, Map.of("error", e.toString()));
            }
        }
    }

    private void pdus(HttpExchange exchange, Map<String, String> query) throws IOException {
        int since = query.containsKey("since") ? Integer.parseInt(query.get("since")) : 0;
        Set<String> commands = query.containsKey("command")
            ? Arrays.stream(query.get("command").split(",")).map(String::trim).collect(Collectors.toSet())
            : null;
        List<PduRecord> records = smsc.log.snapshot(since);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(200, 0);
        try (OutputStream body = exchange.getResponseBody();
             JsonWriter w = new JsonWriter(new BufferedWriter(new OutputStreamWriter(body, StandardCharsets.UTF_8), 1 << 16))) {
            w.beginArray();
            int index = Math.max(0, since);
            for (PduRecord record : records) {
                if (commands == null || commands.contains(record.command())) {
                    record.write(w, index);
                }
                index++;
            }
            w.endArray();
        }
    }

    private static Map<String, Object> body(HttpExchange exchange) throws IOException {
        String text = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (text.isEmpty()) {
            return new HashMap<>();
        }
        Map<String, Object> map = GSON.fromJson(text, new TypeToken<LinkedHashMap<String, Object>>() { }.getType());
        if (map == null) {
            throw new IllegalArgumentException("expected a JSON object");
        }
        return map;
    }

    private static Map<String, String> query(String raw) {
        Map<String, String> map = new HashMap<>();
        if (raw == null) {
            return map;
        }
        for (String pair : raw.split("&")) {
            int eq = pair.indexOf('=');
            String k = eq < 0 ? pair : pair.substring(0, eq);
            String v = eq < 0 ? "" : pair.substring(eq + 1);
            map.put(URLDecoder.decode(k, StandardCharsets.UTF_8), URLDecoder.decode(v, StandardCharsets.UTF_8));
        }
        return map;
    }

    private static void json(HttpExchange exchange, int status, Object value) throws IOException {
        byte[] bytes = GSON.toJson(value).getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }
}
