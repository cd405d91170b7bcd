package sms.smsc;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicBoolean;

import org.jsmpp.InvalidResponseException;
import org.jsmpp.PDUStringException;
import org.jsmpp.bean.BindType;
import org.jsmpp.bean.DataCoding;
import org.jsmpp.bean.ESMClass;
import org.jsmpp.bean.NumberingPlanIndicator;
import org.jsmpp.bean.OptionalParameter;
import org.jsmpp.bean.RegisteredDelivery;
import org.jsmpp.bean.TypeOfNumber;
import org.jsmpp.extra.ResponseTimeoutException;
import org.jsmpp.session.SMPPServerSession;
import org.jsmpp.session.ServerMessageReceiverListener;
import org.jsmpp.session.ServerResponseDeliveryListener;
import org.jsmpp.session.SessionStateListener;

/**
 * One connection (a "bind" in the log, numbered from 1 in accept order). Adds to jsmpp's server
 * session a deliver_sm that does not wait for its response (the response is matched from the PDU
 * tap instead, so receipts are counted acknowledged even when the answer comes late), an
 * enquire_link on demand and a per-bind submit rate window.
 */
final class SmscSession extends SMPPServerSession {
    /** Threads processing one bind's requests: bounds how many submit_sm can wait out answerDelayMs at once. */
    static final int PDU_PROCESSOR_THREADS = 128;

    final int bindNumber;
    final TappedConnection tappedConnection;
    final long connectedAt = System.currentTimeMillis();
    volatile String systemId;
    volatile BindType bindType;
    volatile long boundAt;
    volatile long lastEnquireLinkAt;
    final AtomicBoolean enquireLinkInFlight = new AtomicBoolean();
    private final ArrayDeque<Long> recentSubmitNanos = new ArrayDeque<>();

    SmscSession(int bindNumber, TappedConnection connection, SessionStateListener stateListener,
        ServerMessageReceiverListener messageListener, ServerResponseDeliveryListener responseListener) {
        super(connection, stateListener, messageListener, responseListener, PDU_PROCESSOR_THREADS, 10_000);
        this.bindNumber = bindNumber;
        this.tappedConnection = connection;
    }

    int nextSequence() {
        return sequence().nextValue();
    }

    /** Writes a deliver_sm with the given sequence number and returns without waiting for the response. */
    void sendDeliverSm(int sequenceNumber, TypeOfNumber sourceTon, NumberingPlanIndicator sourceNpi, String source,
        TypeOfNumber destTon, NumberingPlanIndicator destNpi, String destination, ESMClass esmClass,
        DataCoding dataCoding, byte[] shortMessage, OptionalParameter... optionalParameters)
        throws PDUStringException, IOException {
        ensureReceivable("deliver_sm");
        // A failed write leaves the closing to jsmpp's reader, which sees the broken socket.
        pduSender().sendDeliverSm(connection().getOutputStream(), sequenceNumber, "", sourceTon, sourceNpi, source,
            destTon, destNpi, destination, esmClass, (byte) 0, (byte) 0, new RegisteredDelivery(0), dataCoding,
            shortMessage, optionalParameters);
    }

    /** Writes a data_sm (its message in message_payload) without waiting for the response. */
    void sendDataSm(int sequenceNumber, TypeOfNumber sourceTon, NumberingPlanIndicator sourceNpi, String source,
        TypeOfNumber destTon, NumberingPlanIndicator destNpi, String destination, ESMClass esmClass,
        DataCoding dataCoding, OptionalParameter... optionalParameters) throws PDUStringException, IOException {
        ensureReceivable("data_sm");
        pduSender().sendDataSm(connection().getOutputStream(), sequenceNumber, "", sourceTon, sourceNpi, source,
            destTon, destNpi, destination, esmClass, new RegisteredDelivery(0), dataCoding, optionalParameters);
    }

    /** Sends enquire_link and waits for its response (up to the transaction timer). */
    void enquireLinkNow() throws ResponseTimeoutException, InvalidResponseException, IOException {
        sendEnquireLink();
    }

    /**
     * Counts a submit_sm against the bind's rate: false when {@code maxTps} submissions were already
     * admitted within the last second (a throttled one does not count).
     */
    synchronized boolean admitSubmit(int maxTps) {
        if (maxTps <= 0) {
            return true;
        }
        long now = System.nanoTime();
        while (!recentSubmitNanos.isEmpty() && now - recentSubmitNanos.peekFirst() >= 1_000_000_000L) {
            recentSubmitNanos.pollFirst();
        }
        if (recentSubmitNanos.size() >= maxTps) {
            return false;
        }
        recentSubmitNanos.addLast(now);
        return true;
    }

    synchronized void clearRate() {
        recentSubmitNanos.clear();
    }

    String bindTypeName() {
        BindType type = bindType;
        if (type == null) {
            return null;
        }
        return switch (type) {
            case BIND_TX -> "transmitter";
            case BIND_RX -> "receiver";
            case BIND_TRX -> "transceiver";
        };
    }
}
