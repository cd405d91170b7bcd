package sms.smsc;

import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;

import org.jsmpp.session.connection.Connection;

/**
 * A jsmpp {@link Connection} over a plain socket whose streams pass every byte through a
 * {@link PduFramer}: incoming PDUs are reported once read, outgoing ones just before they are
 * written (so a request is always logged before the response it causes).
 */
final class TappedConnection implements Connection {
    interface Listener {
        void onPdu(int bind, boolean incoming, byte[] pdu);
    }

    private final Socket socket;
    private final InputStream tappedIn;
    private final OutputStream tappedOut;

    TappedConnection(Socket socket, int bind, Listener listener) throws IOException {
        this.socket = socket;
        PduFramer inFramer = new PduFramer(pdu -> listener.onPdu(bind, true, pdu));
        PduFramer outFramer = new PduFramer(pdu -> listener.onPdu(bind, false, pdu));
        this.tappedIn = new FilterInputStream(socket.getInputStream()) {
            @Override
            public int read() throws IOException {
                int b = super.read();
                if (b >= 0) {
                    inFramer.feed(b);
                }
                return b;
            }

            @Override
            public int read(byte[] buffer, int offset, int length) throws IOException {
                int n = super.read(buffer, offset, length);
                if (n > 0) {
                    inFramer.feed(buffer, offset, n);
                }
                return n;
            }
        };
        this.tappedOut = new FilterOutputStream(socket.getOutputStream()) {
            @Override
            public void write(int b) throws IOException {
                outFramer.feed(b);
                out.write(b);
            }

            @Override
            public void write(byte[] buffer, int offset, int length) throws IOException {
                outFramer.feed(buffer, offset, length);
                out.write(buffer, offset, length);
            }
        };
    }

    @Override
    public boolean isOpen() {
        return !socket.isClosed();
    }

    @Override
    public InetAddress getInetAddress() {
        return socket.getInetAddress();
    }

    @Override
    public InetAddress getLocalAddress() {
        return socket.getLocalAddress();
    }

    @Override
    public int getPort() {
        return socket.getPort();
    }

    @Override
    public int getLocalPort() {
        return socket.getLocalPort();
    }

    @Override
    public InputStream getInputStream() {
        return tappedIn;
    }

    @Override
    public OutputStream getOutputStream() {
        return tappedOut;
    }

    @Override
    public void setSoTimeout(int timeout) throws IOException {
        socket.setSoTimeout(timeout);
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
