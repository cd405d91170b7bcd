package sms.smsc;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import org.jsmpp.bean.DataCodings;
import org.jsmpp.bean.ESMClass;
import org.jsmpp.bean.NumberingPlanIndicator;
import org.jsmpp.bean.OptionalParameter;
import org.jsmpp.bean.TypeOfNumber;

/**
 * Mobile-originated messages (POST /mo, GET /mo): a deliver_sm or data_sm per part, with a UDH of
 * 8-bit (IEI 0x00) or 16-bit (IEI 0x08) reference or SAR TLVs, any data_coding, the parts in any
 * order and repeated; each part's response status is reported. With {@code resend}, a part without
 * a response of status 0 or ESME_RX_R_APPN (0x66) is sent again every resendUnackedMs, on any
 * receiving bind, as an SMSC redelivers (see README.md).
 */
final class MoSender {
    private static final int ESME_RX_R_APPN = 0x66;

    /** One part of one MO, from its first sending until a final answer (with resend). */
    static final class Part {
        final int id;
        final int seq;
        final byte[] shortMessage;
        final OptionalParameter[] tlvs;
        final MoRequest request;
        final List<Integer> statuses = new ArrayList<>();
        volatile int attempts;
        volatile boolean done;

        Part(int id, int seq, byte[] shortMessage, OptionalParameter[] tlvs, MoRequest request) {
            this.id = id;
            this.seq = seq;
            this.shortMessage = shortMessage;
            this.tlvs = tlvs;
            this.request = request;
        }
    }

    /** What POST /mo asks for. */
    record MoRequest(String command, String from, String to, int dataCoding, int esmClass, byte[] bytes, String concat,
        int ref, List<Integer> cuts, List<Integer> order, boolean resend, String systemId, long waitMs, int destTon) {
    }

    private final Smsc smsc;
    private final AtomicInteger ids = new AtomicInteger();
    private final Map<Integer, Part> tracked = new ConcurrentHashMap<>();

    MoSender(Smsc smsc) {
        this.smsc = smsc;
    }

    /** Builds the parts, sends them in the order asked (each after the previous one's answer or waitMs). */
    Map<String, Object> send(MoRequest request) throws Exception {
        List<Part> parts = parts(request);
        List<Integer> order = request.order() != null ? request.order() : range(parts.size());
        List<Map<String, Object>> sent = new ArrayList<>();
        for (int index : order) {
            if (index < 1 || index > parts.size()) {
                throw new IllegalArgumentException("order: parts are numbered 1 to " + parts.size());
            }
            Part part = parts.get(index - 1);
            if (request.resend()) {
                tracked.put(part.id, part);
            }
            sent.add(attempt(part, request.waitMs()));
        }
        Map<String, Object> result = new LinkedHashMap<>(sent.get(0));
        result.put("parts", sent);
        return result;
    }

    /** The parts sent with resend: their answers so far. */
    List<Map<String, Object>> tracked() {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Part p : tracked.values()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", p.id);
            m.put("seq", p.seq);
            m.put("attempts", p.attempts);
            synchronized (p.statuses) {
                m.put("statuses", new ArrayList<>(p.statuses));
            }
            m.put("done", p.done);
            out.add(m);
        }
        out.sort((a, b) -> Integer.compare((int) a.get("id"), (int) b.get("id")));
        return out;
    }

    void reset() {
        for (Part p : tracked.values()) {
            p.done = true;
        }
        tracked.clear();
    }

    private Map<String, Object> attempt(Part part, long waitMs) throws Exception {
        MoRequest r = part.request;
        SmscSession target = smsc.pickReceiver(r.systemId());
        if (target == null) {
            if (part.attempts == 0 && !r.resend()) {
                throw new IllegalStateException("no receiver or transceiver bind of " + smsc.accountOf(r.systemId()));
            }
            scheduleResend(part);
            return answer(part, null, null, null);
        }
        CompletableFuture<Integer> answered = new CompletableFuture<>();
        int sequence = target.nextSequence();
        smsc.awaitResponse(target, sequence, answered::complete);
        part.attempts++;
        try {
            ESMClass esm = new ESMClass(r.esmClass() | ("udh8".equals(r.concat()) || "udh16".equals(r.concat()) ? 0x40 : 0));
            TypeOfNumber sourceTon = numeric(r.from()) ? TypeOfNumber.INTERNATIONAL : TypeOfNumber.ALPHANUMERIC;
            NumberingPlanIndicator sourceNpi = numeric(r.from()) ? NumberingPlanIndicator.ISDN : NumberingPlanIndicator.UNKNOWN;
            TypeOfNumber destTon = r.destTon() >= 0 ? TypeOfNumber.valueOf((byte) r.destTon())
                : numeric(r.to()) ? TypeOfNumber.INTERNATIONAL : TypeOfNumber.ALPHANUMERIC;
            NumberingPlanIndicator destNpi = numeric(r.to()) ? NumberingPlanIndicator.ISDN : NumberingPlanIndicator.UNKNOWN;
            if ("data_sm".equals(r.command())) {
                target.sendDataSm(sequence, sourceTon, sourceNpi, digits(r.from()), destTon, destNpi, digits(r.to()), esm,
                    DataCodings.newInstance((byte) r.dataCoding()), part.tlvs);
            } else {
                target.sendDeliverSm(sequence, sourceTon, sourceNpi, digits(r.from()), destTon, destNpi, digits(r.to()),
                    esm, DataCodings.newInstance((byte) r.dataCoding()), part.shortMessage, part.tlvs);
            }
        } catch (Exception e) {
            smsc.forgetResponse(target, sequence);
            if (!r.resend()) {
                throw e;
            }
            scheduleResend(part);
            return answer(part, target.bindNumber, sequence, null);
        }
        if (r.resend()) {
            // Whatever comes back, decide later: a late answer still counts.
            answered.thenAccept(status -> onAnswer(part, status));
            smsc.timer().schedule(() -> {
                if (!part.done) {
                    resend(part);
                }
            }, smsc.config.resendUnackedMs, TimeUnit.MILLISECONDS);
        }
        Integer status;
        try {
            status = answered.get(waitMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            if (!r.resend()) {
                smsc.forgetResponse(target, sequence);
            }
            status = null;
        }
        if (!r.resend() && status != null) {
            synchronized (part.statuses) {
                part.statuses.add(status);
            }
        }
        return answer(part, target.bindNumber, sequence, status);
    }

    private void onAnswer(Part part, int status) {
        synchronized (part.statuses) {
            part.statuses.add(status);
        }
        if (status == 0 || status == ESME_RX_R_APPN) {
            part.done = true;
        }
    }

    private void scheduleResend(Part part) {
        smsc.timer().schedule(() -> resend(part), smsc.config.resendUnackedMs, TimeUnit.MILLISECONDS);
    }

    private void resend(Part part) {
        if (part.done || !tracked.containsKey(part.id)) {
            return;
        }
        smsc.workers().execute(() -> {
            try {
                attempt(part, 0);
            } catch (Exception e) {
                scheduleResend(part);
            }
        });
    }

    private static Map<String, Object> answer(Part part, Integer bind, Integer sequence, Integer status) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("part", part.seq);
        m.put("id", part.id);
        m.put("bind", bind);
        m.put("sequence", sequence);
        m.put("status", status);
        return m;
    }

    /** The parts of a request: its bytes cut at `cuts` (offsets), each with its concatenation. */
    private List<Part> parts(MoRequest r) {
        byte[] bytes = r.bytes();
        List<Integer> cuts = r.cuts() != null ? r.cuts() : List.of();
        List<byte[]> payloads = new ArrayList<>();
        int from = 0;
        for (int cut : cuts) {
            if (cut <= from || cut >= bytes.length) {
                throw new IllegalArgumentException("cuts must increase within the message's bytes");
            }
            payloads.add(java.util.Arrays.copyOfRange(bytes, from, cut));
            from = cut;
        }
        payloads.add(java.util.Arrays.copyOfRange(bytes, from, bytes.length));
        int total = payloads.size();
        if (total > 255) {
            throw new IllegalArgumentException("at most 255 parts");
        }
        if (total > 1 && r.concat() == null) {
            throw new IllegalArgumentException("cuts need concat: udh8, udh16 or sar");
        }
        boolean dataSm = "data_sm".equals(r.command());
        List<Part> parts = new ArrayList<>();
        for (int i = 0; i < total; i++) {
            int seq = i + 1;
            byte[] payload = payloads.get(i);
            List<OptionalParameter> tlvs = new ArrayList<>();
            byte[] body = payload;
            if (total > 1 && "udh8".equals(r.concat())) {
                body = concat(new byte[] {5, 0, 3, (byte) r.ref(), (byte) total, (byte) seq}, payload);
            } else if (total > 1 && "udh16".equals(r.concat())) {
                body = concat(new byte[] {6, 8, 4, (byte) (r.ref() >> 8), (byte) r.ref(), (byte) total, (byte) seq}, payload);
            } else if (total > 1 && "sar".equals(r.concat())) {
                tlvs.add(new OptionalParameter.Sar_msg_ref_num((short) r.ref()));
                tlvs.add(new OptionalParameter.Sar_total_segments((byte) total));
                tlvs.add(new OptionalParameter.Sar_segment_seqnum((byte) seq));
            }
            // data_sm has no short_message; a deliver_sm body over 254 bytes goes in message_payload too.
            byte[] shortMessage = body;
            if (dataSm || body.length > 254) {
                tlvs.add(new OptionalParameter.OctetString((short) 0x0424, body));
                shortMessage = new byte[0];
            }
            parts.add(new Part(ids.incrementAndGet(), seq, shortMessage, tlvs.toArray(new OptionalParameter[0]), r));
        }
        return parts;
    }

    /** Reads POST /mo's body (see README.md). */
    static MoRequest request(Map<String, Object> b) {
        String from = string(b, "from", true);
        String to = string(b, "to", true);
        String command = b.containsKey("command") ? string(b, "command", true) : "deliver_sm";
        if (!command.equals("deliver_sm") && !command.equals("data_sm")) {
            throw new IllegalArgumentException("command must be deliver_sm or data_sm");
        }
        String text = string(b, "text", false);
        String hex = string(b, "hex", false);
        if ((text == null) == (hex == null)) {
            throw new IllegalArgumentException("give text or hex");
        }
        Integer dataCoding = b.get("dataCoding") instanceof Number n ? n.intValue() : null;
        int dc = dataCoding != null ? dataCoding
            : hex != null || StandardCharsets.ISO_8859_1.newEncoder().canEncode(text) ? 3 : 8;
        byte[] bytes = hex != null ? HexFormat.of().parseHex(hex) : switch (dc) {
            case 0, 1 -> text.getBytes(StandardCharsets.US_ASCII);
            case 3 -> text.getBytes(StandardCharsets.ISO_8859_1);
            case 8 -> text.getBytes(StandardCharsets.UTF_16BE);
            default -> throw new IllegalArgumentException("with text, dataCoding must be 0, 1, 3 or 8 (any with hex)");
        };
        String concat = string(b, "concat", false);
        if (concat != null && !List.of("udh8", "udh16", "sar").contains(concat)) {
            throw new IllegalArgumentException("concat must be udh8, udh16 or sar");
        }
        int ref = b.get("ref") instanceof Number n ? n.intValue() : 1;
        int esmClass = b.get("esmClass") instanceof Number n ? n.intValue() : 0;
        long waitMs = b.get("waitMs") instanceof Number n ? n.longValue() : 5_000;
        // -1: by the address, as before (numeric TON 1, else TON 5).
        int destTon = b.get("destTon") instanceof Number n ? n.intValue() : -1;
        boolean resend = Boolean.TRUE.equals(b.get("resend"));
        return new MoRequest(command, from, to, dc, esmClass, bytes, concat, ref, integers(b, "cuts"),
            integers(b, "order"), resend, string(b, "systemId", false), waitMs, destTon);
    }

    private static List<Integer> integers(Map<String, Object> b, String key) {
        if (!(b.get(key) instanceof List<?> list)) {
            return null;
        }
        List<Integer> out = new ArrayList<>();
        for (Object o : list) {
            if (!(o instanceof Number n)) {
                throw new IllegalArgumentException(key + " must hold numbers");
            }
            out.add(n.intValue());
        }
        return out;
    }

    private static String string(Map<String, Object> body, String key, boolean required) {
        Object value = body.get(key);
        if (value == null) {
            if (required) {
                throw new IllegalArgumentException(key + " is required");
            }
            return null;
        }
        if (!(value instanceof String s)) {
            throw new IllegalArgumentException(key + " must be a string");
        }
        return s;
    }

    private static List<Integer> range(int n) {
        List<Integer> out = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            out.add(i);
        }
        return out;
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = new byte[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    static String digits(String address) {
        return address != null && address.startsWith("+") ? address.substring(1) : String.valueOf(address);
    }

    static boolean numeric(String address) {
        String d = digits(address);
        return !d.isEmpty() && d.chars().allMatch(Character::isDigit);
    }
}
