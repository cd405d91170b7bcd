package sms.smsc;

import java.util.ArrayList;
import java.util.List;

/** Every PDU of every connection in the order this process saw them; in memory, until a reset. */
final class PduLog {
    private static final long BASE_MICROS = System.currentTimeMillis() * 1000;
    private static final long BASE_NANOS = System.nanoTime();

    private final List<PduRecord> records = new ArrayList<>();

    /** Epoch microseconds from a monotonic clock (sub-millisecond, never going backwards). */
    static long nowMicros() {
        return BASE_MICROS + (System.nanoTime() - BASE_NANOS) / 1000;
    }

    synchronized PduRecord add(boolean incoming, int bind, byte[] pdu) {
        PduRecord record = PduRecord.parse(nowMicros(), incoming, bind, pdu);
        records.add(record);
        return record;
    }

    /** The records from index {@code since} on. */
    synchronized List<PduRecord> snapshot(int since) {
        if (since >= records.size()) {
            return List.of();
        }
        return new ArrayList<>(records.subList(Math.max(0, since), records.size()));
    }

    synchronized int size() {
        return records.size();
    }

    synchronized void clear() {
        records.clear();
    }
}
