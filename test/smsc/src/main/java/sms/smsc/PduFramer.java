package sms.smsc;

import java.util.function.Consumer;

/**
 * Cuts a byte stream (one direction of one connection) into whole PDUs by their command_length,
 * handing each complete PDU to the sink. Used on both sides of {@link TappedConnection} so the log
 * sees exactly the bytes on the wire. A length outside 16..1 MiB stops the framing (jsmpp closes
 * such a connection anyway).
 */
final class PduFramer {
    private static final int MAX_PDU = 1 << 20;

    private final Consumer<byte[]> sink;
    private final byte[] lengthBytes = new byte[4];
    private int lengthFill;
    private byte[] pdu;
    private int pduFill;
    private boolean broken;

    PduFramer(Consumer<byte[]> sink) {
        this.sink = sink;
    }

    synchronized void feed(int b) {
        feed(new byte[] {(byte) b}, 0, 1);
    }

    synchronized void feed(byte[] bytes, int offset, int length) {
        while (length > 0 && !broken) {
            if (pdu == null) {
                int n = Math.min(4 - lengthFill, length);
                System.arraycopy(bytes, offset, lengthBytes, lengthFill, n);
                lengthFill += n;
                offset += n;
                length -= n;
                if (lengthFill == 4) {
                    int commandLength = ((lengthBytes[0] & 0xff) << 24) | ((lengthBytes[1] & 0xff) << 16)
                        | ((lengthBytes[2] & 0xff) << 8) | (lengthBytes[3] & 0xff);
                    if (commandLength < 16 || commandLength > MAX_PDU) {
                        broken = true;
                        return;
                    }
                    pdu = new byte[commandLength];
                    System.arraycopy(lengthBytes, 0, pdu, 0, 4);
                    pduFill = 4;
                    lengthFill = 0;
                }
            } else {
                int n = Math.min(pdu.length - pduFill, length);
                System.arraycopy(bytes, offset, pdu, pduFill, n);
                pduFill += n;
                offset += n;
                length -= n;
                if (pduFill == pdu.length) {
                    byte[] complete = pdu;
                    pdu = null;
                    sink.accept(complete);
                }
            }
        }
    }
}
