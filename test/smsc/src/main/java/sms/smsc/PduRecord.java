package sms.smsc;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.google.gson.stream.JsonWriter;

/**
 * One PDU as it crossed the wire, decoded from its bytes (not from jsmpp's beans, so the log shows
 * what was sent even where jsmpp would reject or normalise it). Written to JSON by {@link #write}.
 */
final class PduRecord {
    static final int SUBMIT_SM = 0x00000004;
    static final int DELIVER_SM = 0x00000005;
    static final int DELIVER_SM_RESP = 0x80000005;
    static final int DATA_SM_RESP = 0x80000103;
    static final int ENQUIRE_LINK_RESP = 0x80000015;

    private static final Map<Integer, String> NAMES = Map.ofEntries(
        Map.entry(0x80000000, "generic_nack"),
        Map.entry(0x00000001, "bind_receiver"), Map.entry(0x80000001, "bind_receiver_resp"),
        Map.entry(0x00000002, "bind_transmitter"), Map.entry(0x80000002, "bind_transmitter_resp"),
        Map.entry(0x00000003, "query_sm"), Map.entry(0x80000003, "query_sm_resp"),
        Map.entry(0x00000004, "submit_sm"), Map.entry(0x80000004, "submit_sm_resp"),
        Map.entry(0x00000005, "deliver_sm"), Map.entry(0x80000005, "deliver_sm_resp"),
        Map.entry(0x00000006, "unbind"), Map.entry(0x80000006, "unbind_resp"),
        Map.entry(0x00000007, "replace_sm"), Map.entry(0x80000007, "replace_sm_resp"),
        Map.entry(0x00000008, "cancel_sm"), Map.entry(0x80000008, "cancel_sm_resp"),
        Map.entry(0x00000009, "bind_transceiver"), Map.entry(0x80000009, "bind_transceiver_resp"),
        Map.entry(0x0000000B, "outbind"),
        Map.entry(0x00000015, "enquire_link"), Map.entry(0x80000015, "enquire_link_resp"),
        Map.entry(0x00000021, "submit_multi"), Map.entry(0x80000021, "submit_multi_resp"),
        Map.entry(0x00000102, "alert_notification"),
        Map.entry(0x00000103, "data_sm"), Map.entry(0x80000103, "data_sm_resp"));

    record Tlv(int tag, byte[] value) {
    }

    final long atMicros;
    final boolean incoming;
    final int bind;
    final int length;
    final int commandId;
    final int status;
    final int sequence;

    // submit_sm / deliver_sm
    String serviceType;
    int sourceAddrTon;
    int sourceAddrNpi;
    String sourceAddr;
    int destAddrTon;
    int destAddrNpi;
    String destinationAddr;
    int esmClass;
    int protocolId;
    int priorityFlag;
    String scheduleDeliveryTime;
    String validityPeriod;
    int registeredDelivery;
    int replaceIfPresentFlag;
    int dataCoding;
    int smDefaultMsgId;
    byte[] shortMessage;
    List<Tlv> optionalParameters;
    // *_sm_resp
    String messageId;
    // bind_*
    String systemId;
    String systemType;
    Integer interfaceVersion;
    /** Set when the body could not be decoded: the whole PDU in hex. */
    String malformedHex;

    private PduRecord(long atMicros, boolean incoming, int bind, byte[] pdu) {
        this.atMicros = atMicros;
        this.incoming = incoming;
        this.bind = bind;
        this.length = pdu.length;
        this.commandId = int32(pdu, 4);
        this.status = int32(pdu, 8);
        this.sequence = int32(pdu, 12);
    }

    static PduRecord parse(long atMicros, boolean incoming, int bind, byte[] pdu) {
        PduRecord record = new PduRecord(atMicros, incoming, bind, pdu);
        try {
            record.parseBody(pdu);
        } catch (RuntimeException e) {
            record.malformedHex = Hex.of(pdu);
        }
        return record;
    }

    String command() {
        String name = NAMES.get(commandId);
        return name != null ? name : String.format("0x%08x", commandId);
    }

    private void parseBody(byte[] pdu) {
        Reader r = new Reader(pdu);
        switch (commandId) {
            case SUBMIT_SM, DELIVER_SM -> {
                serviceType = r.cString();
                sourceAddrTon = r.u8();
                sourceAddrNpi = r.u8();
                sourceAddr = r.cString();
                destAddrTon = r.u8();
                destAddrNpi = r.u8();
                destinationAddr = r.cString();
                esmClass = r.u8();
                protocolId = r.u8();
                priorityFlag = r.u8();
                scheduleDeliveryTime = r.cString();
                validityPeriod = r.cString();
                registeredDelivery = r.u8();
                replaceIfPresentFlag = r.u8();
                dataCoding = r.u8();
                smDefaultMsgId = r.u8();
                shortMessage = r.bytes(r.u8());
                optionalParameters = r.tlvs();
            }
            case 0x80000004, 0x80000005, 0x80000103, 0x80000021 -> {
                if (r.remaining() > 0) {
                    messageId = r.cString();
                }
            }
            case 0x00000001, 0x00000002, 0x00000009 -> {
                systemId = r.cString();
                r.cString(); // password: not logged
                systemType = r.cString();
                interfaceVersion = r.u8();
            }
            case 0x80000001, 0x80000002, 0x80000009 -> {
                if (r.remaining() > 0) {
                    systemId = r.cString();
                    optionalParameters = r.tlvs();
                }
            }
            default -> {
                // header only, or a body this log does not decode
            }
        }
    }

    void write(JsonWriter w, int index) throws IOException {
        w.beginObject();
        w.name("index").value(index);
        w.name("at").jsonValue((atMicros / 1000) + "." + String.format("%03d", atMicros % 1000));
        w.name("dir").value(incoming ? "in" : "out");
        w.name("bind").value(bind);
        w.name("command").value(command());
        w.name("command_id").value(commandId & 0xffffffffL);
        w.name("status").value(status & 0xffffffffL);
        w.name("sequence").value(sequence & 0xffffffffL);
        w.name("length").value(length);
        if (shortMessage != null) {
            w.name("service_type").value(serviceType);
            w.name("source_addr_ton").value(sourceAddrTon);
            w.name("source_addr_npi").value(sourceAddrNpi);
            w.name("source_addr").value(sourceAddr);
            w.name("dest_addr_ton").value(destAddrTon);
            w.name("dest_addr_npi").value(destAddrNpi);
            w.name("destination_addr").value(destinationAddr);
            w.name("esm_class").value(esmClass);
            w.name("protocol_id").value(protocolId);
            w.name("priority_flag").value(priorityFlag);
            w.name("schedule_delivery_time").value(scheduleDeliveryTime);
            w.name("validity_period").value(validityPeriod);
            w.name("registered_delivery").value(registeredDelivery);
            w.name("replace_if_present_flag").value(replaceIfPresentFlag);
            w.name("data_coding").value(dataCoding);
            w.name("sm_default_msg_id").value(smDefaultMsgId);
            w.name("sm_length").value(shortMessage.length);
            w.name("short_message_hex").value(Hex.of(shortMessage));
        }
        if (messageId != null) {
            w.name("message_id").value(messageId);
        }
        if (systemId != null) {
            w.name("system_id").value(systemId);
        }
        if (systemType != null) {
            w.name("system_type").value(systemType);
        }
        if (interfaceVersion != null) {
            w.name("interface_version").value(interfaceVersion);
        }
        if (optionalParameters != null) {
            w.name("optional_parameters").beginArray();
            for (Tlv tlv : optionalParameters) {
                w.beginObject();
                w.name("tag").value(tlv.tag());
                w.name("value_hex").value(Hex.of(tlv.value()));
                w.endObject();
            }
            w.endArray();
        }
        if (malformedHex != null) {
            w.name("malformed_hex").value(malformedHex);
        }
        w.endObject();
    }

    static int int32(byte[] b, int offset) {
        return ((b[offset] & 0xff) << 24) | ((b[offset + 1] & 0xff) << 16) | ((b[offset + 2] & 0xff) << 8)
            | (b[offset + 3] & 0xff);
    }

    /** Reads a PDU body after its 16-byte header; throws on a truncated body. */
    private static final class Reader {
        private final byte[] pdu;
        private int position = 16;

        Reader(byte[] pdu) {
            this.pdu = pdu;
        }

        int remaining() {
            return pdu.length - position;
        }

        int u8() {
            check(1);
            return pdu[position++] & 0xff;
        }

        byte[] bytes(int n) {
            check(n);
            byte[] out = new byte[n];
            System.arraycopy(pdu, position, out, 0, n);
            position += n;
            return out;
        }

        String cString() {
            int end = position;
            while (end < pdu.length && pdu[end] != 0) {
                end++;
            }
            if (end >= pdu.length) {
                throw new IllegalStateException("unterminated C-Octet String");
            }
            String s = new String(pdu, position, end - position, StandardCharsets.ISO_8859_1);
            position = end + 1;
            return s;
        }

        List<Tlv> tlvs() {
            List<Tlv> list = new ArrayList<>();
            while (remaining() >= 4) {
                int tag = (u8() << 8) | u8();
                int len = (u8() << 8) | u8();
                list.add(new Tlv(tag, bytes(len)));
            }
            if (remaining() != 0) {
                throw new IllegalStateException("trailing bytes after TLVs");
            }
            return list;
        }

        private void check(int n) {
            if (n > remaining()) {
                throw new IllegalStateException("truncated PDU");
            }
        }
    }
}
