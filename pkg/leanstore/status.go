package leanstore

import (
	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/internal/status"
)

// ListPath is how an informer's last list was served.
type ListPath = reflector.ListPath

const (
	// ListPathNone: no list has completed yet.
	ListPathNone = reflector.ListPathNone
	// ListPathStreaming: a streaming list (watch with sendInitialEvents).
	ListPathStreaming = reflector.ListPathStreaming
	// ListPathPaged: a paged LIST.
	ListPathPaged = reflector.ListPathPaged
	// ListPathClientGo: the informer is client-go's own (the clientset has no REST
	// client, e.g. a fake clientset in unit tests); only stripping applies.
	ListPathClientGo = reflector.ListPathClientGo
)

// failedAttempt is one failed list or watch attempt of an informer
// (reflector.FailedAttempt): what its status reporter records, logs and counts.
type failedAttempt = reflector.FailedAttempt

// Status is the state of one informer's list-and-watch path: its list path,
// last list, failures, watches, the heap bound's collections, the mutation
// guard's findings and, when set, its shard and encoded store (package status
// keeps it; see its fields there).
type Status = status.Status

// ShardStatus is the shard side of an informer's Status (WithShard).
type ShardStatus = status.Shard

// EncodedStatus is what an informer's encoded store holds and how its reads
// were served (Status.Encoded, WithEncodedStore).
type EncodedStatus = status.Encoded

// isReported reports whether the informer's status reporter has been told err
// already (see reflector.ReportedError).
func isReported(err error) bool { return reflector.IsReported(err) }
