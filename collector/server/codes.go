package server

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stratatrace/strata/authn"
	"github.com/stratatrace/strata/collector/ingest"
	"github.com/stratatrace/strata/collector/query"
	"github.com/stratatrace/strata/collector/store"
)

// codeTable maps domain errors to gRPC codes; the first match wins. It is the
// only place a collector error becomes a code: handlers of every service
// (ingest, query) return plain errors, and the server's interceptors pass
// them through toStatus.
var codeTable = []struct {
	err  error
	code codes.Code
}{
	{store.ErrInvalidBatch, codes.InvalidArgument},
	{store.ErrInvalidQuery, codes.InvalidArgument},
	{store.ErrNotFound, codes.NotFound},
	{query.ErrRowBudget, codes.ResourceExhausted},
	{store.ErrClosed, codes.Unavailable},
	{ingest.ErrDraining, codes.Unavailable},
	{authn.ErrUnauthenticated, codes.Unauthenticated},
	{authn.ErrNoRole, codes.PermissionDenied},
	{authn.ErrForbidden, codes.PermissionDenied},
	{context.Canceled, codes.Canceled},
	{context.DeadlineExceeded, codes.DeadlineExceeded},
}

// toStatus converts err into a gRPC status error through codeTable. Errors
// that already carry a status (from the transport) pass through; anything
// unknown is Internal.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return err
	}
	for _, e := range codeTable {
		if errors.Is(err, e.err) {
			return status.Error(e.code, err.Error())
		}
	}
	return status.Error(codes.Internal, err.Error())
}

func unaryStatus(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	resp, err := h(ctx, req)
	return resp, toStatus(err)
}

func streamStatus(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return toStatus(h(srv, ss))
}
