// A small client of the SMS service in Go, on code generated from proto/ (buf.gen.go.yaml): it
// sends a message and a batch, reads them back, lists messages, handles a field error and lists
// the messages handsets sent to the account's numbers, and makes a read-only key, refused a send
// for its scope, then deletes it (ApiKeyService). With SMS_WEBHOOK_SECRET (the account's
// "whsec_..." webhook secret) it also points the account's inbound URL at a receiver of its own,
// waits for one inbound webhook, checks its signature (webhook.go) and puts the URL back.
// Connect protocol over HTTP/1.1 on PORT; with connect.WithGRPC() and an h2c client it speaks
// gRPC on GRPC_PORT instead (docs/clients.md).
//
//	SMS_URL=http://127.0.0.1:8080 SMS_API_KEY=... SMS_API_SECRET=... go run ./cmd/smsclient
//
// The receiver listens on SMS_WEBHOOK_HOST (default 127.0.0.1), which the service must reach, for
// at most SMS_WEBHOOK_WAIT_S seconds (default 60).
package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	smsv1 "example.com/sms/gen/go/sms/v1"
	"example.com/sms/gen/go/sms/v1/smsv1connect"
)

// basicAuth adds the account's credentials to every call.
func basicAuth(key, secret string) connect.Interceptor {
	header := "Basic " + base64.StdEncoding.EncodeToString([]byte(key+":"+secret))
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", header)
			return next(ctx, req)
		}
	})
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "smsclient:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	auth := connect.WithInterceptors(basicAuth(os.Getenv("SMS_API_KEY"), os.Getenv("SMS_API_SECRET")))
	messaging := smsv1connect.NewMessagingServiceClient(http.DefaultClient, os.Getenv("SMS_URL"), auth)

	// One message; the key makes a retry safe (the same answer, nothing charged twice).
	sendReq := connect.NewRequest(&smsv1.SendMessageRequest{To: "+4915112345678", Text: "Hello from Go"})
	sendReq.Header().Set("Idempotency-Key", fmt.Sprintf("go-example-%d", time.Now().UnixNano()))
	sent, err := messaging.SendMessage(ctx, sendReq)
	if err != nil {
		return fmt.Errorf("SendMessage: %w", err)
	}
	msg := sent.Msg.GetMessage()
	fmt.Printf("sent %d from %s, credit left %d micro-units\n", msg.GetId(), msg.GetSender(), msg.GetCreditRemainingMicros())

	// A batch with one invalid message: accepted in part, the rejection says which field.
	batch, err := messaging.SendBatch(ctx, connect.NewRequest(&smsv1.SendBatchRequest{
		Name: ptr("go example"),
		Messages: []*smsv1.BatchMessage{
			{To: "+4915112345678", Text: "first"},
			{To: "not a number", Text: "second"},
		},
	}))
	if err != nil {
		return fmt.Errorf("SendBatch: %w", err)
	}
	for _, rejected := range batch.Msg.GetErrors() {
		for _, v := range rejected.GetFieldViolations() {
			fmt.Printf("batch rejected %s: %s\n", v.GetField(), v.GetDescription())
		}
	}
	batchID := batch.Msg.GetBatch().GetId()
	fmt.Printf("batch %d accepted %d\n", batchID, batch.Msg.GetBatch().GetAcceptedCount())

	read, err := messaging.GetMessage(ctx, connect.NewRequest(&smsv1.GetMessageRequest{Id: msg.GetId()}))
	if err != nil {
		return fmt.Errorf("GetMessage: %w", err)
	}
	fmt.Printf("read %d status %s\n", read.Msg.GetMessage().GetId(), read.Msg.GetMessage().GetStatus())
	got, err := messaging.GetBatch(ctx, connect.NewRequest(&smsv1.GetBatchRequest{Id: batchID}))
	if err != nil {
		return fmt.Errorf("GetBatch: %w", err)
	}
	fmt.Printf("batch %d active %t\n", got.Msg.GetBatch().GetId(), got.Msg.GetBatch().GetProgress().GetIsActive())

	// Every message, newest first, two at a time.
	listed, token := 0, ""
	for {
		page, err := messaging.ListMessages(ctx, connect.NewRequest(&smsv1.ListMessagesRequest{PageSize: 2, PageToken: token}))
		if err != nil {
			return fmt.Errorf("ListMessages: %w", err)
		}
		listed += len(page.Msg.GetMessages())
		if token = page.Msg.GetNextPageToken(); token == "" {
			break
		}
	}
	fmt.Printf("listed %d messages\n", listed)

	// A field error: INVALID_ARGUMENT with ErrorInfo and BadRequest details.
	_, err = messaging.SendMessage(ctx, connect.NewRequest(&smsv1.SendMessageRequest{To: "12", Text: "x"}))
	var connectErr *connect.Error
	if !errors.As(err, &connectErr) || connectErr.Code() != connect.CodeInvalidArgument {
		return fmt.Errorf("expected INVALID_ARGUMENT, got %v", err)
	}
	for _, detail := range connectErr.Details() {
		value, err := detail.Value()
		if err != nil {
			return err
		}
		switch d := value.(type) {
		case *errdetails.ErrorInfo:
			fmt.Printf("error reason %s domain %s\n", d.GetReason(), d.GetDomain())
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				fmt.Printf("field error %s: %s\n", v.GetField(), v.GetDescription())
			}
		}
	}

	// What handsets sent to the account's numbers, newest first, two at a time.
	inbound := smsv1connect.NewInboundServiceClient(http.DefaultClient, os.Getenv("SMS_URL"), auth)
	listed, token = 0, ""
	for {
		page, err := inbound.ListInboundMessages(ctx, connect.NewRequest(&smsv1.ListInboundMessagesRequest{PageSize: 2, PageToken: token}))
		if err != nil {
			return fmt.Errorf("ListInboundMessages: %w", err)
		}
		for _, m := range page.Msg.GetInboundMessages() {
			fmt.Printf("inbound %d from %s to %s (%s): %s\n", m.GetId(), m.GetSender(), m.GetTo(), m.GetOptOutType(), m.GetText())
		}
		listed += len(page.Msg.GetInboundMessages())
		if token = page.Msg.GetNextPageToken(); token == "" {
			break
		}
	}
	fmt.Printf("listed %d inbound messages\n", listed)

	if err := readOnlyKey(ctx, auth); err != nil {
		return err
	}

	if secret := os.Getenv("SMS_WEBHOOK_SECRET"); secret != "" {
		return receiveInboundWebhook(ctx, inbound, secret)
	}
	return nil
}

// readOnlyKey makes a key that may only read (a CI job's, say), shows that a send with it is
// refused for its scope, and deletes it: how a leaked or unneeded key is replaced without downtime.
func readOnlyKey(ctx context.Context, auth connect.ClientOption) error {
	keys := smsv1connect.NewApiKeyServiceClient(http.DefaultClient, os.Getenv("SMS_URL"), auth)
	made, err := keys.CreateApiKey(ctx, connect.NewRequest(&smsv1.CreateApiKeyRequest{
		Name:  "go example, read only",
		Scope: smsv1.ApiKeyScope_API_KEY_SCOPE_READ,
	}))
	if err != nil {
		return fmt.Errorf("CreateApiKey: %w", err)
	}
	key := made.Msg.GetApiKey().GetApiKey()
	fmt.Printf("made read key %s\n", key)
	reader := smsv1connect.NewMessagingServiceClient(http.DefaultClient, os.Getenv("SMS_URL"),
		connect.WithInterceptors(basicAuth(key, made.Msg.GetApiSecret())))
	_, err = reader.SendMessage(ctx, connect.NewRequest(&smsv1.SendMessageRequest{To: "+4915112345678", Text: "x"}))
	var connectErr *connect.Error
	if !errors.As(err, &connectErr) || connectErr.Code() != connect.CodePermissionDenied {
		return fmt.Errorf("a send with a read key: want PERMISSION_DENIED, got %v", err)
	}
	for _, detail := range connectErr.Details() {
		if value, derr := detail.Value(); derr == nil {
			if info, ok := value.(*errdetails.ErrorInfo); ok {
				fmt.Printf("read key refused: %s\n", info.GetReason())
			}
		}
	}
	if _, err := keys.DeleteApiKey(ctx, connect.NewRequest(&smsv1.DeleteApiKeyRequest{ApiKey: key})); err != nil {
		return fmt.Errorf("DeleteApiKey: %w", err)
	}
	fmt.Printf("deleted key %s\n", key)
	return nil
}

func ptr[T any](v T) *T { return &v }
