package sms.smsc;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;

import org.jsmpp.PDUStringException;
import org.jsmpp.SMPPConstant;
import org.jsmpp.bean.BroadcastSm;
import org.jsmpp.bean.CancelBroadcastSm;
import org.jsmpp.bean.CancelSm;
import org.jsmpp.bean.DataCodings;
import org.jsmpp.bean.DataSm;
import org.jsmpp.bean.ESMClass;
import org.jsmpp.bean.InterfaceVersion;
import org.jsmpp.bean.NumberingPlanIndicator;
import org.jsmpp.bean.OptionalParameter;
import org.jsmpp.bean.QueryBroadcastSm;
import org.jsmpp.bean.QuerySm;
import org.jsmpp.bean.ReplaceSm;
import org.jsmpp.bean.SubmitMulti;
import org.jsmpp.bean.SubmitSm;
import org.jsmpp.bean.TypeOfNumber;
import org.jsmpp.extra.ProcessRequestException;
import org.jsmpp.extra.ResponseTimeoutException;
import org.jsmpp.extra.SessionState;
import org.jsmpp.session.BindRequest;
import org.jsmpp.session.BroadcastSmResult;
import org.jsmpp.session.DataSmResult;
import org.jsmpp.session.QueryBroadcastSmResult;
import org.jsmpp.session.QuerySmResult;
import org.jsmpp.session.SMPPServerSession;
import org.jsmpp.session.ServerMessageReceiverListener;
import org.jsmpp.session.ServerResponseDeliveryListener;
import org.jsmpp.session.Session;
import org.jsmpp.session.SessionStateListener;
import org.jsmpp.session.SubmitMultiResult;
import org.jsmpp.session.SubmitSmResult;
import org.jsmpp.util.MessageId;

/**
 * The SMSC: accepts binds of one account, answers submit_sm by the destination number (the
 * simulator's table, see README.md), sends receipts and mobile-originated messages as deliver_sm,
 * resends those until acknowledged, sends its own enquire_link, and logs every PDU.
 */
final class Smsc implements TappedConnection.Listener {
    private static final int BIND_TIMEOUT_MS = 10_000;
    /** How long this SMSC waits for an enquire_link_resp (or unbind_resp) before closing the bind. */
    private static final long TRANSACTION_TIMER_MS = 5_000;
    private static final DateTimeFormatter RECEIPT_DATE =
        DateTimeFormatter.ofPattern("yyMMddHHmm").withZone(ZoneOffset.UTC);

    /** What a destination number gets. stat == null: no receipt (the 7 numbers). */
    record Outcome(String stat, String err, byte messageState) {
        static final Outcome DELIVERED = new Outcome("DELIVRD", "000", (byte) 2);

        boolean delivered() {
            return "DELIVRD".equals(stat);
        }
    }

    /** A receipt from its submit_sm_resp until a deliver_sm_resp with status 0 (or a reset). */
    static final class Receipt {
        final String messageId;
        final String systemId;
        final long submittedAtMs;
        final byte sourceTon;
        final byte sourceNpi;
        final String source;
        final byte destTon;
        final byte destNpi;
        final String destination;
        final Outcome outcome;
        final String text;
        volatile boolean released;
        volatile boolean acknowledged;
        volatile boolean dropped;
        // guarded by this
        SmscSession sentOn;
        long sentAtNanos;
        long resendAfterNanos;
        int attempts;
        volatile Integer lastStatus;
        byte[] body;
        final List<Long> responseKeys = new ArrayList<>();

        Receipt(String messageId, String systemId, SubmitSm submit, Outcome outcome, String text) {
            this.messageId = messageId;
            this.systemId = systemId;
            this.submittedAtMs = System.currentTimeMillis();
            // The receipt goes from the handset back to the sender.
            this.sourceTon = submit.getDestAddrTon();
            this.sourceNpi = submit.getDestAddrNpi();
            this.source = submit.getDestAddress();
            this.destTon = submit.getSourceAddrTon();
            this.destNpi = submit.getSourceAddrNpi();
            this.destination = submit.getSourceAddr();
            this.outcome = outcome;
            this.text = text;
        }
    }

    final Config config;
    final PduLog log = new PduLog();
    private final String host;
    private final String systemId;
    private final String password;
    private ServerSocket serverSocket;
    private final AtomicInteger connectionCount = new AtomicInteger();
    private final Map<Integer, SmscSession> sessions = new ConcurrentHashMap<>();
    private final ScheduledExecutorService timer = Executors.newScheduledThreadPool(2, daemon("smsc-timer"));
    private final ExecutorService workers = Executors.newCachedThreadPool(daemon("smsc-worker"));
    /** Destinations (8 and 9 numbers) that already had their one refused submit_sm. */
    private final Set<String> refusedOnce = ConcurrentHashMap.newKeySet();
    /** Receipts not yet acknowledged, by message_id. */
    private final Map<String, Receipt> receipts = new ConcurrentHashMap<>();
    /** What to do with the deliver_sm_resp of (bind << 32 | sequence). */
    private final Map<Long, IntConsumer> awaitingResponse = new ConcurrentHashMap<>();
    private final AtomicInteger roundRobin = new AtomicInteger();
    private final String idPrefix = String.format("%06x", new SecureRandom().nextInt(1 << 24));
    private final AtomicLong idCounter = new AtomicLong();
    private volatile boolean stopped;

    Smsc(Config config, String host, String systemId, String password) {
        this.config = config;
        this.host = host;
        this.systemId = systemId;
        this.password = password;
    }

    /** Listens (SO_REUSEADDR, so a restarted process gets the same port at once) and returns the port. */
    int start(int port) throws IOException {
        ServerSocket socket = new ServerSocket();
        socket.setReuseAddress(true);
        socket.bind(new InetSocketAddress(host, port), 128);
        serverSocket = socket;
        Thread acceptor = daemon("smsc-accept").newThread(this::acceptLoop);
        acceptor.start();
        timer.scheduleWithFixedDelay(this::enquireLinkTick, 100, 100, TimeUnit.MILLISECONDS);
        return socket.getLocalPort();
    }

    void stop() {
        stopped = true;
        try {
            serverSocket.close();
        } catch (IOException e) {
            // closing anyway
        }
        for (SmscSession session : sessions.values()) {
            session.close();
        }
        timer.shutdownNow();
        workers.shutdownNow();
    }

    private void acceptLoop() {
        while (!stopped) {
            Socket socket;
            try {
                socket = serverSocket.accept();
            } catch (IOException e) {
                if (!stopped) {
                    System.err.println("test-smsc: accept failed: " + e);
                }
                return;
            }
            workers.execute(() -> handleConnection(socket));
        }
    }

    private void handleConnection(Socket socket) {
        int bind = connectionCount.incrementAndGet();
        SmscSession session;
        try {
            socket.setTcpNoDelay(true);
            session = new SmscSession(bind, new TappedConnection(socket, bind, this), stateListener, receiver,
                responses);
        } catch (IOException e) {
            try {
                socket.close();
            } catch (IOException ignored) {
                // gone already
            }
            return;
        }
        sessions.put(bind, session);
        try {
            BindRequest request = session.waitForBind(BIND_TIMEOUT_MS);
            if (!systemId.equals(request.getSystemId()) || !password.equals(request.getPassword())) {
                request.reject(SMPPConstant.STAT_ESME_RBINDFAIL);
                // jsmpp's close() can wait half a second for its enquire_link thread: not on the timer.
                timer.schedule(() -> workers.execute(session::close), 200, TimeUnit.MILLISECONDS);
                return;
            }
            session.systemId = request.getSystemId();
            session.bindType = request.getBindType();
            session.setTransactionTimer(TRANSACTION_TIMER_MS);
            request.accept("test-smsc", InterfaceVersion.IF_34);
            // jsmpp's own enquire_link (after a read timeout) is off: enquireLinkTick sends one every
            // enquireLinkMs whatever the traffic.
            session.setEnquireLinkTimer(0);
            long now = System.currentTimeMillis();
            session.boundAt = now;
            session.lastEnquireLinkAt = now;
            onBound(session);
        } catch (TimeoutException e) {
            session.close();
        } catch (Exception e) {
            System.err.println("test-smsc: bind " + bind + " failed: " + e);
            session.close();
        }
    }

    private final SessionStateListener stateListener = new SessionStateListener() {
        @Override
        public void onStateChange(SessionState newState, SessionState oldState, Session source) {
            if ((newState == SessionState.UNBOUND || newState == SessionState.CLOSED)
                && source instanceof SmscSession session && session.bindNumber > 0) {
                onGone(session, newState == SessionState.CLOSED);
            }
        }
    };

    private void onBound(SmscSession session) {
        if (!session.getSessionState().isReceivable()) {
            return;
        }
        // Receipts waiting for a receiver (or sent on a bind that went away) go out now.
        for (Receipt r : receipts.values()) {
            if (r.systemId.equals(session.systemId) && r.released && !r.acknowledged) {
                timer.execute(() -> attempt(r));
            }
        }
    }

    private void onGone(SmscSession session, boolean closed) {
        if (closed) {
            sessions.remove(session.bindNumber);
        }
        awaitingResponse.keySet().removeIf(key -> (int) (key >>> 32) == session.bindNumber);
        for (Receipt r : receipts.values()) {
            if (r.released && !r.acknowledged) {
                timer.execute(() -> attempt(r));
            }
        }
    }

    @Override
    public void onPdu(int bind, boolean incoming, byte[] pdu) {
        PduRecord record = log.add(incoming, bind, pdu);
        if (incoming && (record.commandId == PduRecord.DELIVER_SM_RESP || record.commandId == PduRecord.DATA_SM_RESP)) {
            IntConsumer then = awaitingResponse.remove(key(bind, record.sequence));
            if (then != null) {
                then.accept(record.status);
            }
        }
    }

    private static long key(int bind, int sequence) {
        return ((long) bind << 32) | (sequence & 0xffffffffL);
    }

    // -------------------------------------------------------------------------------------------
    // submit_sm

    private final ServerMessageReceiverListener receiver = new ServerMessageReceiverListener() {
        @Override
        public SubmitSmResult onAcceptSubmitSm(SubmitSm submit, SMPPServerSession source)
            throws ProcessRequestException {
            return submitSm(submit, (SmscSession) source);
        }

        @Override
        public SubmitMultiResult onAcceptSubmitMulti(SubmitMulti submitMulti, SMPPServerSession source)
            throws ProcessRequestException {
            throw unsupported("submit_multi");
        }

        @Override
        public QuerySmResult onAcceptQuerySm(QuerySm querySm, SMPPServerSession source)
            throws ProcessRequestException {
            throw unsupported("query_sm");
        }

        @Override
        public void onAcceptReplaceSm(ReplaceSm replaceSm, SMPPServerSession source) throws ProcessRequestException {
            throw unsupported("replace_sm");
        }

        @Override
        public void onAcceptCancelSm(CancelSm cancelSm, SMPPServerSession source) throws ProcessRequestException {
            throw unsupported("cancel_sm");
        }

        @Override
        public BroadcastSmResult onAcceptBroadcastSm(BroadcastSm broadcastSm, SMPPServerSession source)
            throws ProcessRequestException {
            throw unsupported("broadcast_sm");
        }

        @Override
        public void onAcceptCancelBroadcastSm(CancelBroadcastSm cancelBroadcastSm, SMPPServerSession source)
            throws ProcessRequestException {
            throw unsupported("cancel_broadcast_sm");
        }

        @Override
        public QueryBroadcastSmResult onAcceptQueryBroadcastSm(QueryBroadcastSm queryBroadcastSm,
            SMPPServerSession source) throws ProcessRequestException {
            throw unsupported("query_broadcast_sm");
        }

        @Override
        public DataSmResult onAcceptDataSm(DataSm dataSm, Session source) throws ProcessRequestException {
            throw unsupported("data_sm");
        }
    };

    private static ProcessRequestException unsupported(String command) {
        return new ProcessRequestException(command + " is not supported by this test SMSC",
            SMPPConstant.STAT_ESME_RINVCMDID);
    }

    private SubmitSmResult submitSm(SubmitSm submit, SmscSession session) throws ProcessRequestException {
        holdIfHanging(session);
        boolean admitted = session.admitSubmit(config.maxTps);
        long delay = config.answerDelayMs;
        if (delay > 0) {
            try {
                Thread.sleep(delay);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ProcessRequestException("interrupted", SMPPConstant.STAT_ESME_RSYSERR);
            }
        }
        if (!admitted) {
            throw new ProcessRequestException("over maxTps", SMPPConstant.STAT_ESME_RTHROTTLED);
        }
        int refuseAll = config.refuseStatus;
        if (refuseAll != 0) {
            throw new ProcessRequestException("refused by refuseStatus", refuseAll);
        }
        String digits = digits(submit.getDestAddress());
        int refusal = refusal(digits);
        if (refusal != 0) {
            throw new ProcessRequestException("refused by destination rule", refusal);
        }
        String messageId = idPrefix + String.format("%010x", idCounter.incrementAndGet());
        Outcome outcome = outcome(digits);
        int requested = submit.getRegisteredDelivery() & 0x03;
        boolean wanted = requested == 1 || requested == 3 || (requested == 2 && outcome != null && !outcome.delivered());
        if (outcome != null && wanted && !config.dropReceipts) {
            receipts.put(messageId, new Receipt(messageId, session.systemId, submit, outcome, receiptText(submit)));
        }
        try {
            return new SubmitSmResult(new MessageId(messageId), new OptionalParameter[0]);
        } catch (PDUStringException e) {
            throw new ProcessRequestException(e.getMessage(), SMPPConstant.STAT_ESME_RSYSERR);
        }
    }

    /**
     * With hangAfterSubmits on, the submit_sm past that count are never answered: held here until the
     * setting is given again (then answered as usual) or their connection goes.
     */
    private void holdIfHanging(SmscSession session) throws ProcessRequestException {
        long epoch = config.hangEpoch;
        long limit = config.hangAfterSubmits;
        if (limit == 0 || config.submitsSinceHang.incrementAndGet() <= limit) {
            return;
        }
        while (config.hangEpoch == epoch && session.getSessionState().isBound()) {
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ProcessRequestException("interrupted", SMPPConstant.STAT_ESME_RSYSERR);
            }
        }
    }

    private static String digits(String address) {
        return address != null && address.startsWith("+") ? address.substring(1) : String.valueOf(address);
    }

    private static boolean ruled(String digits) {
        return digits.length() >= 4 && digits.startsWith("999") && digits.chars().allMatch(Character::isDigit);
    }

    /** A submit_sm_resp error for this destination, or 0 to accept. */
    private int refusal(String digits) {
        if (!ruled(digits)) {
            return 0;
        }
        return switch (digits.charAt(digits.length() - 1)) {
            case '1' -> SMPPConstant.STAT_ESME_RSUBMITFAIL;
            case '8' -> refusedOnce.add(digits) ? SMPPConstant.STAT_ESME_RTHROTTLED : 0;
            case '9' -> refusedOnce.add(digits) ? SMPPConstant.STAT_ESME_RMSGQFUL : 0;
            default -> 0;
        };
    }

    /** The receipt an accepted submission gets; null for none. */
    private static Outcome outcome(String digits) {
        if (!ruled(digits)) {
            return Outcome.DELIVERED;
        }
        return switch (digits.charAt(digits.length() - 1)) {
            case '2' -> new Outcome("UNDELIV", "027", (byte) 5); // Unreachable (absent subscriber)
            case '3' -> new Outcome("EXPIRED", "000", (byte) 3);
            case '4' -> new Outcome("UNDELIV", "032", (byte) 5); // SIM card full
            case '5' -> new Outcome("UNDELIV", "001", (byte) 5); // Unroutable (unknown subscriber)
            case '6' -> new Outcome("UNDELIV", "000", (byte) 5); // Undelivered
            case '7' -> null;
            default -> Outcome.DELIVERED;
        };
    }

    /**
     * The first 20 characters of the submitted text, keeping only characters that read the same in
     * ASCII and in the GSM 7-bit alphabet (letters, digits, space, !"#%&'()*+,-./:;<=>?), since
     * clients decode data_coding 0 either way; '?' for anything else.
     */
    private static String receiptText(SubmitSm submit) {
        byte[] message = submit.getShortMessage();
        if (message == null || message.length == 0) {
            OptionalParameter payload = submit.getOptionalParameter((short) 0x0424);
            if (payload != null) {
                byte[] serialized = payload.serialize();
                message = Arrays.copyOfRange(serialized, 4, serialized.length);
            } else {
                message = new byte[0];
            }
        }
        if ((submit.getEsmClass() & 0x40) != 0 && message.length > 0) {
            int headerLength = 1 + (message[0] & 0xff);
            message = Arrays.copyOfRange(message, Math.min(headerLength, message.length), message.length);
        }
        String text = (submit.getDataCoding() & 0xff) == 8
            ? new String(message, StandardCharsets.UTF_16BE)
            : new String(message, StandardCharsets.ISO_8859_1);
        StringBuilder out = new StringBuilder();
        text.codePoints().limit(20).forEach(c -> out.append(receiptSafe(c) ? (char) c : '?'));
        return out.toString();
    }

    private static boolean receiptSafe(int c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
            || (c >= ' ' && c <= '?' && c != '$');
    }

    private final ServerResponseDeliveryListener responses = new ServerResponseDeliveryListener() {
        @Override
        public void onSubmitSmRespSent(SubmitSmResult result, SMPPServerSession source) {
            Receipt r = receipts.get(result.getMessageId());
            if (r != null) {
                r.released = true;
                timer.schedule(() -> attempt(r), config.receiptDelayMs, TimeUnit.MILLISECONDS);
            }
        }

        @Override
        public void onSubmitSmRespError(SubmitSmResult result, Exception cause, SMPPServerSession source) {
            receipts.remove(result.getMessageId());
        }

        @Override
        public void onSubmitMultiRespSent(SubmitMultiResult result, SMPPServerSession source) {
        }

        @Override
        public void onSubmitMultiRespError(SubmitMultiResult result, Exception cause, SMPPServerSession source) {
        }
    };

    // -------------------------------------------------------------------------------------------
    // receipts

    /**
     * Sends the receipt if it is not acknowledged and not waiting for an answer on a live bind (a
     * check is scheduled resendUnackedMs after each sending). With no receiving bind it waits for
     * the next bind.
     */
    private void attempt(Receipt r) {
        if (stopped) {
            return;
        }
        synchronized (r) {
            if (r.acknowledged || r.dropped || !r.released) {
                return;
            }
            long now = System.nanoTime();
            SmscSession last = r.sentOn;
            if (last != null && last.getSessionState().isReceivable() && now - r.sentAtNanos < r.resendAfterNanos) {
                return;
            }
            SmscSession target = pickReceiver(r.systemId);
            if (target == null) {
                r.sentOn = null;
                return;
            }
            if (r.body == null) {
                boolean delivered = r.outcome.delivered();
                r.body = String.format("id:%s sub:001 dlvrd:%s submit date:%s done date:%s stat:%s err:%s text:%s",
                    r.messageId, delivered ? "001" : "000", RECEIPT_DATE.format(Instant.ofEpochMilli(r.submittedAtMs)),
                    RECEIPT_DATE.format(Instant.now()), r.outcome.stat(), r.outcome.err(), r.text)
                    .getBytes(StandardCharsets.US_ASCII);
            }
            OptionalParameter[] tlvs = config.receiptTlvs
                ? new OptionalParameter[] {
                    new OptionalParameter.COctetString((short) 0x001E, r.messageId),
                    new OptionalParameter.Byte((short) 0x0427, r.outcome.messageState())}
                : new OptionalParameter[0];
            int sequence = target.nextSequence();
            long key = key(target.bindNumber, sequence);
            awaitingResponse.put(key, status -> onReceiptResponse(r, status));
            r.responseKeys.add(key);
            try {
                target.sendDeliverSm(sequence, ton(r.sourceTon), npi(r.sourceNpi), r.source, ton(r.destTon),
                    npi(r.destNpi), r.destination, new ESMClass(0x04), DataCodings.ZERO, r.body, tlvs);
            } catch (Exception e) {
                awaitingResponse.remove(key);
                r.sentOn = null;
                timer.schedule(() -> attempt(r), 100, TimeUnit.MILLISECONDS);
                return;
            }
            long resendMs = config.resendUnackedMs;
            r.sentOn = target;
            r.sentAtNanos = now;
            r.resendAfterNanos = resendMs * 1_000_000L;
            r.attempts++;
            timer.schedule(() -> attempt(r), resendMs, TimeUnit.MILLISECONDS);
        }
    }

    private void onReceiptResponse(Receipt r, int status) {
        r.lastStatus = status;
        if (status == 0 && !r.acknowledged) {
            r.acknowledged = true;
            receipts.remove(r.messageId, r);
            timer.execute(() -> {
                synchronized (r) {
                    for (Long k : r.responseKeys) {
                        awaitingResponse.remove(k);
                    }
                }
            });
        }
    }

    SmscSession pickReceiver(String requested) {
        List<SmscSession> candidates = receivers(requested);
        if (candidates.isEmpty()) {
            return null;
        }
        return candidates.get(Math.floorMod(roundRobin.getAndIncrement(), candidates.size()));
    }

    /** The receiving binds (transceiver or receiver) of the account, in bind order. */
    List<SmscSession> receivers(String requested) {
        String account = accountOf(requested);
        List<SmscSession> candidates = new ArrayList<>();
        for (SmscSession s : sessions.values()) {
            if (account.equals(s.systemId) && s.getSessionState().isReceivable()) {
                candidates.add(s);
            }
        }
        candidates.sort(Comparator.comparingInt(s -> s.bindNumber));
        return candidates;
    }

    private static TypeOfNumber ton(byte value) {
        try {
            return TypeOfNumber.valueOf(value);
        } catch (IllegalArgumentException e) {
            return TypeOfNumber.UNKNOWN;
        }
    }

    private static NumberingPlanIndicator npi(byte value) {
        try {
            return NumberingPlanIndicator.valueOf(value);
        } catch (IllegalArgumentException e) {
            return NumberingPlanIndicator.UNKNOWN;
        }
    }

    // -------------------------------------------------------------------------------------------
    // enquire_link

    private void enquireLinkTick() {
        long period = config.enquireLinkMs;
        if (period <= 0) {
            return;
        }
        long now = System.currentTimeMillis();
        for (SmscSession s : sessions.values()) {
            if (!s.getSessionState().isBound() || now - s.lastEnquireLinkAt < period
                || !s.enquireLinkInFlight.compareAndSet(false, true)) {
                continue;
            }
            s.lastEnquireLinkAt = now;
            workers.execute(() -> {
                try {
                    s.enquireLinkNow();
                } catch (ResponseTimeoutException e) {
                    System.err.println("test-smsc: bind " + s.bindNumber + " did not answer enquire_link; closing it");
                    s.close();
                } catch (Exception e) {
                    s.close();
                } finally {
                    s.enquireLinkInFlight.set(false);
                }
            });
        }
    }

    // -------------------------------------------------------------------------------------------
    // control

    /** Mobile-originated messages: MoSender.java. */
    final MoSender mo = new MoSender(this);
    final BulkMo bulkMo = new BulkMo(this);

    /** Waits for the deliver_sm_resp or data_sm_resp of (bind, sequence). */
    void awaitResponse(SmscSession session, int sequence, IntConsumer then) {
        awaitingResponse.put(key(session.bindNumber, sequence), then);
    }

    void forgetResponse(SmscSession session, int sequence) {
        awaitingResponse.remove(key(session.bindNumber, sequence));
    }

    ScheduledExecutorService timer() {
        return timer;
    }

    ExecutorService workers() {
        return workers;
    }

    /** The account MO go to: the given system_id, else the one this SMSC accepts. */
    String accountOf(String account) {
        return account != null ? account : systemId;
    }

    /** Clears the PDU log, the 8/9 numbers' first refusals, pending receipts, the rate windows and the hangAfterSubmits count. */
    void reset() {
        for (Receipt r : receipts.values()) {
            r.dropped = true;
        }
        receipts.clear();
        awaitingResponse.clear();
        mo.reset();
        refusedOnce.clear();
        config.submitsSinceHang.set(0);
        for (SmscSession s : sessions.values()) {
            s.clearRate();
        }
        log.clear();
    }

    List<Map<String, Object>> binds() {
        List<SmscSession> list = new ArrayList<>(sessions.values());
        list.sort(Comparator.comparingInt(s -> s.bindNumber));
        List<Map<String, Object>> out = new ArrayList<>();
        for (SmscSession s : list) {
            if (!s.getSessionState().isBound()) {
                continue;
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("bind", s.bindNumber);
            m.put("system_id", s.systemId);
            m.put("type", s.bindTypeName());
            m.put("state", s.getSessionState().name());
            m.put("remote_port", s.tappedConnection.getPort());
            m.put("bound_at", s.boundAt);
            out.add(m);
        }
        return out;
    }

    List<Map<String, Object>> pendingReceipts() {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Receipt r : receipts.values()) {
            Map<String, Object> m = new LinkedHashMap<>();
            synchronized (r) {
                m.put("message_id", r.messageId);
                m.put("destination_addr", r.source);
                m.put("stat", r.outcome.stat());
                m.put("err", r.outcome.err());
                m.put("released", r.released);
                m.put("attempts", r.attempts);
                m.put("last_bind", r.sentOn != null ? r.sentOn.bindNumber : null);
                m.put("last_status", r.lastStatus);
            }
            out.add(m);
        }
        return out;
    }

    /** Unbinds (or, with abrupt, just closes) the given bind, or every bind when null. */
    List<Integer> disconnect(Integer bind, boolean abrupt) {
        List<Integer> done = new ArrayList<>();
        for (SmscSession s : sessions.values()) {
            if (bind != null && s.bindNumber != bind) {
                continue;
            }
            done.add(s.bindNumber);
            if (abrupt) {
                s.close();
            } else {
                workers.execute(s::unbindAndClose);
            }
        }
        done.sort(Integer::compare);
        return done;
    }

    private static ThreadFactory daemon(String name) {
        AtomicInteger n = new AtomicInteger();
        return runnable -> {
            Thread t = new Thread(runnable, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
