package sms.cloudhopper;

import com.cloudhopper.smpp.SmppConstants;
import com.cloudhopper.smpp.SmppServerConfiguration;
import com.cloudhopper.smpp.SmppServerHandler;
import com.cloudhopper.smpp.SmppServerSession;
import com.cloudhopper.smpp.SmppSessionConfiguration;
import com.cloudhopper.smpp.impl.DefaultSmppServer;
import com.cloudhopper.smpp.impl.DefaultSmppSessionHandler;
import com.cloudhopper.smpp.pdu.BaseBind;
import com.cloudhopper.smpp.pdu.BaseBindResp;
import com.cloudhopper.smpp.pdu.DeliverSm;
import com.cloudhopper.smpp.pdu.EnquireLink;
import com.cloudhopper.smpp.pdu.EnquireLinkResp;
import com.cloudhopper.smpp.pdu.PduRequest;
import com.cloudhopper.smpp.pdu.PduResponse;
import com.cloudhopper.smpp.pdu.SubmitSm;
import com.cloudhopper.smpp.pdu.SubmitSmResp;
import com.cloudhopper.smpp.tlv.Tlv;
import com.cloudhopper.smpp.type.Address;
import com.cloudhopper.smpp.type.SmppProcessingException;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A second test SMSC on cloudhopper-smpp's server (README.md beside pom.xml). Every submit_sm is
 * accepted with a message_id in lowercase hex; its receipt (DELIVRD) follows after
 * --receipt-delay-ms with the same number written in decimal, in the text and in
 * receipted_message_id: the id forms carriers really use. POST /mo sends a mobile-originated
 * deliver_sm, POST /enquire-link sends the SMSC's own enquire_link; GET /log lists what came and
 * went; GET /binds counts the bound sessions. Exits when stdin closes.
 */
public final class Smsc {
  private static final DateTimeFormatter RECEIPT_DATE = DateTimeFormatter.ofPattern("yyMMddHHmm");

  private final String systemId;
  private final String password;
  private final long receiptDelayMs;
  private final List<SmppServerSession> sessions = new CopyOnWriteArrayList<>();
  private final List<String> log = new CopyOnWriteArrayList<>();
  /** Message ids start past 2^32 so that their hex holds letters and their decimal is long. */
  private final AtomicLong ids = new AtomicLong(0x1a2b3c4d00L);
  private final ScheduledExecutorService timers = Executors.newScheduledThreadPool(2);

  private Smsc(String systemId, String password, long receiptDelayMs) {
    this.systemId = systemId;
    this.password = password;
    this.receiptDelayMs = receiptDelayMs;
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> options = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) options.put(args[i], args[i + 1]);
    Smsc smsc =
        new Smsc(
            options.getOrDefault("--system-id", "test"),
            options.getOrDefault("--password", "secret"),
            Long.parseLong(options.getOrDefault("--receipt-delay-ms", "50")));
    int port = freePort(Integer.parseInt(options.getOrDefault("--port", "0")));
    SmppServerConfiguration config = new SmppServerConfiguration();
    config.setHost("127.0.0.1");
    config.setPort(port);
    config.setMaxConnectionSize(16);
    config.setNonBlockingSocketsEnabled(true);
    config.setDefaultRequestExpiryTimeout(30_000);
    config.setDefaultWindowMonitorInterval(15_000);
    config.setDefaultWindowSize(100);
    config.setDefaultWindowWaitTimeout(30_000);
    config.setJmxEnabled(false);
    config.setSystemId("cloudhopper");
    config.setReuseAddress(true);
    DefaultSmppServer server = new DefaultSmppServer(config, smsc.new Binds());
    server.start();
    HttpServer control = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    control.createContext("/", smsc::control);
    control.setExecutor(Executors.newFixedThreadPool(4));
    control.start();
    System.out.println(
        "smsc-cloudhopper listening smpp=" + port + " control=" + control.getAddress().getPort());
    System.out.flush();
    InputStream in = System.in;
    while (in.read() >= 0) {
      // until stdin closes
    }
    control.stop(0);
    server.destroy();
    System.exit(0);
  }

  private static int freePort(int wanted) throws IOException {
    if (wanted != 0) return wanted;
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  private final class Binds implements SmppServerHandler {
    @Override
    public void sessionBindRequested(Long id, SmppSessionConfiguration config, BaseBind bind)
        throws SmppProcessingException {
      if (!systemId.equals(bind.getSystemId()) || !password.equals(bind.getPassword())) {
        throw new SmppProcessingException(SmppConstants.STATUS_BINDFAIL, null);
      }
      config.setName("bind." + id);
    }

    @Override
    public void sessionCreated(Long id, SmppServerSession session, BaseBindResp response) {
      record("{\"command\":\"bind\",\"bind\":" + id + "}");
      session.serverReady(new Requests(session));
      sessions.add(session);
    }

    @Override
    public void sessionDestroyed(Long id, SmppServerSession session) {
      sessions.remove(session);
      session.destroy();
    }
  }

  /** What the client sends on one session. */
  private final class Requests extends DefaultSmppSessionHandler {
    private final SmppServerSession session;

    Requests(SmppServerSession session) {
      this.session = session;
    }

    @Override
    public PduResponse firePduRequestReceived(PduRequest request) {
      if (request instanceof SubmitSm submit) return submitted(session, submit);
      record("{\"command\":\"" + request.getName() + "\"}");
      return request.createResponse();
    }
  }

  private PduResponse submitted(SmppServerSession session, SubmitSm submit) {
    long id = ids.incrementAndGet();
    String hex = Long.toHexString(id);
    String decimal = Long.toString(id);
    record(
        "{\"command\":\"submit_sm\",\"source\":\""
            + submit.getSourceAddress().getAddress()
            + "\",\"destination\":\""
            + submit.getDestAddress().getAddress()
            + "\",\"esm_class\":"
            + (submit.getEsmClass() & 0xff)
            + ",\"data_coding\":"
            + (submit.getDataCoding() & 0xff)
            + ",\"sar\":"
            + sar(submit)
            + ",\"short_message_hex\":\""
            + hex(submit.getShortMessage())
            + "\",\"message_id\":\""
            + hex
            + "\"}");
    SubmitSmResp response = (SubmitSmResp) submit.createResponse();
    response.setMessageId(hex);
    if ((submit.getRegisteredDelivery() & 0x03) != 0) {
      timers.schedule(() -> receipt(session, submit, decimal), receiptDelayMs, TimeUnit.MILLISECONDS);
    }
    return response;
  }

  /** SAR TLVs as [ref, total, seq], or null. */
  private static String sar(SubmitSm submit) {
    Tlv ref = submit.getOptionalParameter(SmppConstants.TAG_SAR_MSG_REF_NUM);
    Tlv total = submit.getOptionalParameter(SmppConstants.TAG_SAR_TOTAL_SEGMENTS);
    Tlv seq = submit.getOptionalParameter(SmppConstants.TAG_SAR_SEGMENT_SEQNUM);
    if (ref == null || total == null || seq == null) return "null";
    return "[" + unsigned(ref.getValue()) + "," + unsigned(total.getValue()) + "," + unsigned(seq.getValue()) + "]";
  }

  private static long unsigned(byte[] bytes) {
    long n = 0;
    for (byte b : bytes) n = (n << 8) | (b & 0xff);
    return n;
  }

  private void receipt(SmppServerSession session, SubmitSm submit, String decimal) {
    String date = ZonedDateTime.now(ZoneOffset.UTC).format(RECEIPT_DATE);
    String text =
        "id:" + decimal + " sub:001 dlvrd:001 submit date:" + date + " done date:" + date
            + " stat:DELIVRD err:000 text:";
    try {
      DeliverSm receipt = new DeliverSm();
      receipt.setEsmClass(SmppConstants.ESM_CLASS_MT_SMSC_DELIVERY_RECEIPT);
      receipt.setSourceAddress(submit.getDestAddress());
      receipt.setDestAddress(submit.getSourceAddress());
      receipt.setDataCoding((byte) 0);
      receipt.setShortMessage(text.getBytes(StandardCharsets.US_ASCII));
      byte[] id = (decimal + "\0").getBytes(StandardCharsets.US_ASCII);
      receipt.addOptionalParameter(new Tlv(SmppConstants.TAG_RECEIPTED_MSG_ID, id));
      receipt.addOptionalParameter(new Tlv(SmppConstants.TAG_MSG_STATE, new byte[] {2}));
      int status = send(session, receipt);
      record("{\"command\":\"deliver_sm_resp\",\"kind\":\"receipt\",\"id\":\"" + decimal + "\",\"status\":" + status + "}");
    } catch (Exception e) {
      record("{\"command\":\"error\",\"kind\":\"receipt\",\"error\":\"" + quote(e.toString()) + "\"}");
    }
  }

  /** Sends a request on the session and answers its response's command_status. */
  private static int send(SmppServerSession session, PduRequest request) throws Exception {
    var future = session.sendRequestPdu(request, 10_000, true);
    if (!future.await() || !future.isSuccess()) {
      throw new IllegalStateException("no response: " + future.getCause());
    }
    return future.getResponse().getCommandStatus();
  }

  private void record(String json) {
    log.add(json);
  }

  private void control(HttpExchange exchange) throws IOException {
    String path = exchange.getRequestURI().getPath();
    Map<String, String> query = query(exchange.getRequestURI().getRawQuery());
    String body;
    int code = 200;
    try {
      switch (path) {
        case "/log" -> body = "[" + String.join(",", log) + "]";
        case "/binds" -> body = "{\"binds\":" + sessions.size() + "}";
        case "/mo" -> body = mo(query);
        case "/enquire-link" -> body = enquireLink();
        default -> {
          code = 404;
          body = "{\"error\":\"not found\"}";
        }
      }
    } catch (Exception e) {
      code = 500;
      body = "{\"error\":\"" + quote(e.toString()) + "\"}";
    }
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("content-type", "application/json");
    exchange.sendResponseHeaders(code, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  /** A mobile-originated deliver_sm (Latin-1, data_coding 3) on the first session; its response status. */
  private String mo(Map<String, String> query) throws Exception {
    SmppServerSession session = firstSession();
    DeliverSm mo = new DeliverSm();
    mo.setSourceAddress(new Address((byte) 1, (byte) 1, query.getOrDefault("from", "")));
    byte ton = Byte.parseByte(query.getOrDefault("ton", "1"));
    mo.setDestAddress(new Address(ton, (byte) 1, query.getOrDefault("to", "")));
    mo.setDataCoding((byte) 3);
    mo.setShortMessage(query.getOrDefault("text", "").getBytes(StandardCharsets.ISO_8859_1));
    int status = send(session, mo);
    record("{\"command\":\"deliver_sm_resp\",\"kind\":\"mo\",\"status\":" + status + "}");
    return "{\"status\":" + status + "}";
  }

  private String enquireLink() throws Exception {
    EnquireLinkResp response = firstSession().enquireLink(new EnquireLink(), 10_000);
    record("{\"command\":\"enquire_link_resp\",\"status\":" + response.getCommandStatus() + "}");
    return "{\"status\":" + response.getCommandStatus() + "}";
  }

  private SmppServerSession firstSession() {
    if (sessions.isEmpty()) throw new IllegalStateException("no bound session");
    return sessions.get(0);
  }

  private static Map<String, String> query(String raw) {
    Map<String, String> out = new HashMap<>();
    if (raw == null) return out;
    for (String pair : raw.split("&")) {
      int eq = pair.indexOf('=');
      if (eq < 0) continue;
      out.put(
          URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
          URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
    }
    return out;
  }

  private static String hex(byte[] bytes) {
    if (bytes == null) return "";
    StringBuilder out = new StringBuilder();
    for (byte b : bytes) out.append(String.format("%02x", b & 0xff));
    return out.toString();
  }

  private static String quote(String s) {
    List<String> parts = new ArrayList<>();
    for (char c : s.toCharArray()) parts.add(c == '"' || c == '\\' ? "\\" + c : c < 0x20 ? " " : String.valueOf(c));
    return String.join("", parts);
  }
}
