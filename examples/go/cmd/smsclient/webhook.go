package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	smsv1 "example.com/sms/gen/go/sms/v1"
	"example.com/sms/gen/go/sms/v1/smsv1connect"
)

// verifyWebhook checks a Standard Webhooks signature: webhook-signature holds "v1,<base64
// HMAC-SHA256>" (several, space separated, while a secret is rotated) over
// "<webhook-id>.<webhook-timestamp>.<payload>", keyed with the base64 part of the account's
// "whsec_" secret. The payload is the raw body of an inbound webhook (a POST), the path and
// query of a status webhook (a GET). A timestamp more than five minutes from now is refused, so
// a recorded request cannot be replayed later.
func verifyWebhook(secret string, header http.Header, payload []byte, now time.Time) bool {
	id, timestamp, signatures := header.Get("Webhook-Id"), header.Get("Webhook-Timestamp"), header.Get("Webhook-Signature")
	seconds, err := strconv.ParseInt(timestamp, 10, 64)
	if id == "" || signatures == "" || err != nil {
		return false
	}
	if age := now.Unix() - seconds; age > 300 || age < -300 {
		return false
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return false
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.", id, timestamp)
	mac.Write(payload)
	expected := mac.Sum(nil)
	for _, signature := range strings.Split(signatures, " ") {
		value, ok := strings.CutPrefix(signature, "v1,")
		if !ok {
			continue
		}
		if given, err := base64.StdEncoding.DecodeString(value); err == nil && hmac.Equal(given, expected) {
			return true
		}
	}
	return false
}

// inboundWebhook is the part of an inbound webhook's JSON body this example prints.
type inboundWebhook struct {
	From string `json:"from"`
	To   string `json:"to"`
	Text string `json:"text"`
}

// receiveInboundWebhook points the account's inbound URL at a local receiver, waits for one
// inbound webhook whose signature holds (answering others 401), then puts the URL back.
func receiveInboundWebhook(ctx context.Context, inbound smsv1connect.InboundServiceClient, secret string) error {
	host := os.Getenv("SMS_WEBHOOK_HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	wait := 60 * time.Second
	if s, err := strconv.Atoi(os.Getenv("SMS_WEBHOOK_WAIT_S")); err == nil {
		wait = time.Duration(s) * time.Second
	}
	listener, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return err
	}
	type delivery struct {
		id      string
		message inboundWebhook
	}
	received := make(chan delivery, 1)
	server := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var message inboundWebhook
		if err != nil || r.Method != http.MethodPost || !verifyWebhook(secret, r.Header, body, time.Now()) || json.Unmarshal(body, &message) != nil {
			fmt.Println("inbound webhook refused: signature invalid")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		// Answer at once (any 2xx): a slow answer is retried as a failure.
		w.WriteHeader(http.StatusNoContent)
		select {
		case received <- delivery{r.Header.Get("Webhook-Id"), message}:
		default: // one is enough; a retry of it is answered all the same
		}
	})}
	go server.Serve(listener)
	defer server.Close()

	url := fmt.Sprintf("http://%s/inbound", listener.Addr())
	before, err := inbound.GetInboundSettings(ctx, connect.NewRequest(&smsv1.GetInboundSettingsRequest{}))
	if err != nil {
		return fmt.Errorf("GetInboundSettings: %w", err)
	}
	if _, err := inbound.UpdateInboundSettings(ctx, connect.NewRequest(&smsv1.UpdateInboundSettingsRequest{InboundUrl: &url})); err != nil {
		return fmt.Errorf("UpdateInboundSettings: %w", err)
	}
	defer func() {
		previous := before.Msg.GetSettings().GetInboundUrl()
		inbound.UpdateInboundSettings(context.Background(), connect.NewRequest(&smsv1.UpdateInboundSettingsRequest{InboundUrl: &previous}))
	}()
	fmt.Printf("waiting for an inbound webhook at %s\n", url)
	select {
	case got := <-received:
		fmt.Printf("inbound webhook %s verified: %s to %s: %s\n", got.id, got.message.From, got.message.To, got.message.Text)
		return nil
	case <-time.After(wait):
		return fmt.Errorf("no inbound webhook within %s", wait)
	case <-ctx.Done():
		return ctx.Err()
	}
}
