package sms.smsc;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import com.google.gson.stream.JsonWriter;

/**
 * Every PDU of every connection in the order this process saw them; in memory, until a reset.
 * With {@link #FILE_PROPERTY} set (the launcher's --pdu-file), each record is also appended to that
 * file as one JSON line, written before the next PDU is logged, so what the SMSC received can be
 * read after it was killed (the in-memory log dies with it).
 */
final class PduLog {
    /** System property naming the file the log is mirrored to. */
    static final String FILE_PROPERTY = "test.smsc.pduFile";

    private static final long BASE_MICROS = System.currentTimeMillis() * 1000;
    private static final long BASE_NANOS = System.nanoTime();

    private final List<PduRecord> records = new ArrayList<>();
    private final FileOutputStream file;
    /** Lines written to the file: its own index, not cleared by a reset. */
    private int fileLines;

    PduLog() {
        String path = System.getProperty(FILE_PROPERTY);
        try {
            file = path == null ? null : new FileOutputStream(path, true);
        } catch (IOException e) {
            throw new IllegalStateException("cannot open the PDU file " + path, e);
        }
    }

    /** Epoch microseconds from a monotonic clock (sub-millisecond, never going backwards). */
    static long nowMicros() {
        return BASE_MICROS + (System.nanoTime() - BASE_NANOS) / 1000;
    }

    synchronized PduRecord add(boolean incoming, int bind, byte[] pdu) {
        PduRecord record = PduRecord.parse(nowMicros(), incoming, bind, pdu);
        records.add(record);
        if (file != null) {
            mirror(record);
        }
        return record;
    }

    /** One write per record: a kill loses no line the SMSC logged, and leaves none half written. */
    private void mirror(PduRecord record) {
        StringWriter line = new StringWriter(512);
        try (JsonWriter w = new JsonWriter(line)) {
            record.write(w, fileLines++);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        line.append('\n');
        try {
            file.write(line.toString().getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            System.err.println("test-smsc: writing the PDU file failed: " + e);
        }
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
