package sms.smsc;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/** What the control server's POST /config changes at run time (also settable by flags at start). */
final class Config {
    /** Delay between a submit_sm_resp and the first sending of its receipt. */
    volatile long receiptDelayMs = 100;
    /** Delay before each submit_sm_resp (error answers included). */
    volatile long answerDelayMs = 0;
    /** A receipt (or MO) without a deliver_sm_resp of status 0 is sent again after this long. */
    volatile long resendUnackedMs = 3000;
    /** Period of this SMSC's own enquire_link on every bind, whatever the traffic; 0 = never. */
    volatile long enquireLinkMs = 10_000;
    /** submit_sm per second per bind before answering ESME_RTHROTTLED (sliding second); 0 = unlimited. */
    volatile int maxTps = 0;
    /** Accepted submissions get no receipt while this is on (as if the network lost them). */
    volatile boolean dropReceipts = false;
    /** Receipts carry receipted_message_id and message_state TLVs; off: only the text's id:. */
    volatile boolean receiptTlvs = true;
    /** 0 = off (the destination rules decide); else every admitted submit_sm is refused with this command_status. */
    volatile int refuseStatus = 0;
    /** 0 = off; else once this many submit_sm came since the setting was given (or a reset), later ones get no answer. */
    volatile long hangAfterSubmits = 0;
    /** Changes whenever hangAfterSubmits is given: submit_sm held under an earlier value are let go. */
    volatile long hangEpoch = 0;
    /** submit_sm counted against hangAfterSubmits. */
    final AtomicLong submitsSinceHang = new AtomicLong();

    synchronized Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("receiptDelayMs", receiptDelayMs);
        m.put("answerDelayMs", answerDelayMs);
        m.put("resendUnackedMs", resendUnackedMs);
        m.put("enquireLinkMs", enquireLinkMs);
        m.put("maxTps", maxTps);
        m.put("dropReceipts", dropReceipts);
        m.put("receiptTlvs", receiptTlvs);
        m.put("refuseStatus", refuseStatus);
        m.put("hangAfterSubmits", hangAfterSubmits);
        return m;
    }

    /**
     * Applies the given keys (numbers or booleans as parsed from JSON). Validates everything before
     * changing anything; throws IllegalArgumentException naming an unknown key or a bad value.
     */
    synchronized void apply(Map<String, Object> changes) {
        for (Map.Entry<String, Object> e : changes.entrySet()) {
            check(e.getKey(), e.getValue());
        }
        for (Map.Entry<String, Object> e : changes.entrySet()) {
            Object v = e.getValue();
            switch (e.getKey()) {
                case "receiptDelayMs" -> receiptDelayMs = millis(v);
                case "answerDelayMs" -> answerDelayMs = millis(v);
                case "resendUnackedMs" -> resendUnackedMs = Math.max(1, millis(v));
                case "enquireLinkMs" -> enquireLinkMs = millis(v);
                case "maxTps" -> maxTps = (int) millis(v);
                case "dropReceipts" -> dropReceipts = (Boolean) v;
                case "receiptTlvs" -> receiptTlvs = (Boolean) v;
                case "refuseStatus" -> refuseStatus = (int) millis(v);
                case "hangAfterSubmits" -> {
                    submitsSinceHang.set(0);
                    hangAfterSubmits = millis(v);
                    hangEpoch++;
                }
                default -> throw new IllegalStateException(e.getKey());
            }
        }
    }

    private static void check(String key, Object value) {
        switch (key) {
            case "receiptDelayMs", "answerDelayMs", "resendUnackedMs", "enquireLinkMs", "maxTps", "hangAfterSubmits" -> {
                if (!(value instanceof Number n) || n.doubleValue() < 0 || n.doubleValue() != Math.floor(n.doubleValue())) {
                    throw new IllegalArgumentException(key + " must be a whole number >= 0, got " + value);
                }
            }
            case "refuseStatus" -> {
                if (!(value instanceof Number n) || n.doubleValue() < 0 || n.doubleValue() > Integer.MAX_VALUE
                    || n.doubleValue() != Math.floor(n.doubleValue())) {
                    throw new IllegalArgumentException(key + " must be a command_status from 0 to 0x7FFFFFFF, got " + value);
                }
            }
            case "dropReceipts", "receiptTlvs" -> {
                if (!(value instanceof Boolean)) {
                    throw new IllegalArgumentException(key + " must be true or false, got " + value);
                }
            }
            default -> throw new IllegalArgumentException("unknown setting " + key);
        }
    }

    private static long millis(Object v) {
        return ((Number) v).longValue();
    }
}
