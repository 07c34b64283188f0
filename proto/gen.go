// Package proto holds Strata's versioned wire schema; the Go code generated
// from it lives beside each .proto file.
package proto

// protoc from Debian's protobuf-compiler; the plugins are pinned in go.mod's tool block.
//go:generate sh -c "protoc -I . --plugin=protoc-gen-go=$(go tool -n protoc-gen-go) --plugin=protoc-gen-go-grpc=$(go tool -n protoc-gen-go-grpc) --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative strata/v1/record.proto strata/v1/ingest.proto strata/v1/query.proto strata/v1/job.proto"
