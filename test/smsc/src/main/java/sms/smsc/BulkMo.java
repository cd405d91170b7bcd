package sms.smsc;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.jsmpp.bean.DataCodings;
import org.jsmpp.bean.ESMClass;
import org.jsmpp.bean.NumberingPlanIndicator;
import org.jsmpp.bean.TypeOfNumber;

/**
 * Many mobile-originated messages at once, for the benchmark (POST /mo/bulk, see README.md):
 * `count` MO from distinct handsets to one number, every `longEvery`-th in three parts (UDH, 8-bit
 * reference), spread round robin over the receiving binds with at most `window` deliver_sm
 * unanswered per bind, started at `perSecond` MO a second (0: as fast as the windows allow). Each
 * part is sent once; the answer reports their statuses and timings.
 */
final class BulkMo {
    private final Smsc smsc;

    BulkMo(Smsc smsc) {
        this.smsc = smsc;
    }

    Map<String, Object> run(Map<String, Object> b) throws Exception {
        String to = (String) b.get("to");
        if (to == null) {
            throw new IllegalArgumentException("to is required");
        }
        int count = intOf(b, "count", 1000);
        int longEvery = intOf(b, "longEvery", 4);
        int window = intOf(b, "window", 50);
        double perSecond = b.get("perSecond") instanceof Number n ? n.doubleValue() : 0;
        long fromBase = b.get("fromBase") instanceof Number n ? n.longValue() : 491510000000L;
        long timeoutMs = b.get("timeoutMs") instanceof Number n ? n.longValue() : 600_000;

        List<SmscSession> binds = smsc.receivers(null);
        if (binds.isEmpty()) {
            throw new IllegalStateException("no receiver or transceiver bind");
        }
        Map<Integer, Semaphore> windows = new ConcurrentHashMap<>();
        for (SmscSession s : binds) {
            windows.put(s.bindNumber, new Semaphore(window));
        }

        int parts = 0;
        for (int i = 0; i < count; i++) {
            parts += longEvery > 0 && i % longEvery == 0 ? 3 : 1;
        }
        CountDownLatch answered = new CountDownLatch(parts);
        Map<Integer, AtomicInteger> statuses = new ConcurrentHashMap<>();
        long[] partNanos = new long[parts];
        long[] moStart = new long[count];
        long[] moEnd = new long[count];
        AtomicInteger moDone = new AtomicInteger();
        AtomicLong lastAnswer = new AtomicLong();
        int[] remaining = new int[count];

        long started = System.nanoTime();
        int part = 0;
        for (int i = 0; i < count; i++) {
            if (perSecond > 0) {
                long due = started + (long) (i * 1e9 / perSecond);
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    TimeUnit.NANOSECONDS.sleep(wait);
                }
            }
            String from = String.valueOf(fromBase + i);
            List<byte[]> bodies = bodies(i, longEvery > 0 && i % longEvery == 0);
            remaining[i] = bodies.size();
            moStart[i] = System.nanoTime();
            for (byte[] body : bodies) {
                SmscSession target = binds.get(part % binds.size());
                Semaphore free = windows.get(target.bindNumber);
                free.acquire();
                int sequence = target.nextSequence();
                final int index = part;
                final int mo = i;
                partNanos[index] = System.nanoTime();
                smsc.awaitResponse(target, sequence, status -> {
                    long now = System.nanoTime();
                    partNanos[index] = now - partNanos[index];
                    statuses.computeIfAbsent(status, k -> new AtomicInteger()).incrementAndGet();
                    free.release();
                    synchronized (remaining) {
                        if (--remaining[mo] == 0) {
                            moEnd[mo] = now;
                            moDone.incrementAndGet();
                        }
                    }
                    lastAnswer.accumulateAndGet(now, Math::max);
                    answered.countDown();
                });
                boolean udh = bodies.size() > 1;
                target.sendDeliverSm(sequence, TypeOfNumber.INTERNATIONAL, NumberingPlanIndicator.ISDN, from,
                    TypeOfNumber.INTERNATIONAL, NumberingPlanIndicator.ISDN, MoSender.digits(to),
                    new ESMClass(udh ? 0x40 : 0), DataCodings.newInstance((byte) 3), body);
                part++;
            }
        }
        long sentAt = System.nanoTime();
        boolean all = answered.await(timeoutMs, TimeUnit.MILLISECONDS);

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("mo", count);
        out.put("parts", parts);
        out.put("complete", all);
        out.put("answeredMo", moDone.get());
        Map<String, Integer> byStatus = new LinkedHashMap<>();
        statuses.forEach((k, v) -> byStatus.put(String.valueOf(k), v.get()));
        out.put("statuses", byStatus);
        double seconds = (lastAnswer.get() - started) / 1e9;
        out.put("seconds", seconds);
        out.put("sendSeconds", (sentAt - started) / 1e9);
        out.put("moPerSecond", moDone.get() / seconds);
        out.put("partMs", percentiles(Arrays.copyOf(partNanos, part)));
        long[] moNanos = new long[count];
        for (int i = 0; i < count; i++) {
            moNanos[i] = moEnd[i] > 0 ? moEnd[i] - moStart[i] : Long.MAX_VALUE;
        }
        out.put("moMs", percentiles(moNanos));
        return out;
    }

    /** One Latin-1 text, or three parts of 100 bytes behind a UDH with reference i. */
    private static List<byte[]> bodies(int i, boolean longMo) {
        if (!longMo) {
            return List.of(("Inbound message number " + i + ", thanks").getBytes(StandardCharsets.ISO_8859_1));
        }
        byte[] text = String.format("%-300s", "Long inbound message " + i + " in three parts")
            .getBytes(StandardCharsets.ISO_8859_1);
        List<byte[]> out = new ArrayList<>();
        for (int seq = 1; seq <= 3; seq++) {
            byte[] udh = {5, 0, 3, (byte) i, 3, (byte) seq};
            byte[] body = new byte[udh.length + 100];
            System.arraycopy(udh, 0, body, 0, udh.length);
            System.arraycopy(text, (seq - 1) * 100, body, udh.length, 100);
            out.add(body);
        }
        return out;
    }

    private static Map<String, Double> percentiles(long[] nanos) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        Map<String, Double> out = new LinkedHashMap<>();
        for (int p : new int[] {50, 99}) {
            if (sorted.length == 0) {
                out.put("p" + p, null);
                continue;
            }
            long v = sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
            out.put("p" + p, v == Long.MAX_VALUE ? null : v / 1e6);
        }
        return out;
    }

    private static int intOf(Map<String, Object> b, String key, int fallback) {
        return b.get(key) instanceof Number n ? n.intValue() : fallback;
    }
}
