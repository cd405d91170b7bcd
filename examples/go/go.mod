module example.com/sms

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261104224025-d1e00e9f33ab
	google.golang.org/protobuf v1.36.12
)
