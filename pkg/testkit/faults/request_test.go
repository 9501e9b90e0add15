package faults

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDescribe(t *testing.T) {
	tests := []struct {
		method, target string
		want           request
	}{
		{"GET", "/api/v1/namespaces/ns1/pods", request{Resource: "pods", Namespace: "ns1", Verb: List}},
		{"GET", "/api/v1/pods?limit=500", request{Resource: "pods", Verb: List}},
		{"GET", "/api/v1/namespaces/ns1/pods/p1", request{Resource: "pods", Namespace: "ns1", Name: "p1", Verb: Get}},
		{"GET", "/api/v1/namespaces/ns1/pods?watch=true&resourceVersion=5", request{Resource: "pods", Namespace: "ns1", Verb: Watch, ResourceVersion: "5"}},
		{"GET", "/api/v1/pods?watch=1", request{Resource: "pods", Verb: Watch}},
		{"GET", "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", request{Resource: "pods", Verb: WatchList}},
		{"GET", "/api/v1/watch/namespaces/ns1/pods", request{Resource: "pods", Namespace: "ns1", Verb: Watch}},
		{"PUT", "/api/v1/namespaces/ns1/pods/p1/status", request{Resource: "pods/status", Namespace: "ns1", Name: "p1", Verb: Update}},
		{"POST", "/api/v1/namespaces/ns1/configmaps", request{Resource: "configmaps", Namespace: "ns1", Verb: Create}},
		{"PATCH", "/apis/apps/v1/namespaces/ns1/deployments/d1", request{Resource: "deployments", Namespace: "ns1", Name: "d1", Verb: Patch}},
		{"DELETE", "/apis/example.com/v1/namespaces/ns1/widgets", request{Resource: "widgets", Namespace: "ns1", Verb: Delete}},
		{"GET", "/api/v1/namespaces", request{Resource: "namespaces", Verb: List}},
		{"GET", "/api/v1/namespaces/ns1", request{Resource: "namespaces", Namespace: "ns1", Name: "ns1", Verb: Get}},
		{"PUT", "/api/v1/namespaces/ns1/finalize", request{Resource: "namespaces/finalize", Namespace: "ns1", Name: "ns1", Verb: Update}},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", request{Resource: "clusterroles", Verb: List}},
		{"GET", "/api", request{Verb: Other}},
		{"GET", "/apis/apps/v1", request{Verb: Other}},
		{"GET", "/version", request{Verb: Other}},
		{"OPTIONS", "/api/v1/pods", request{Resource: "pods", Verb: Other}},
	}
	for _, tt := range tests {
		got := describe(httptest.NewRequest(tt.method, tt.target, nil))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tt.method, tt.target, diff)
		}
	}
}

// TestJSONFrames checks that frames split at the end of each top-level value,
// whatever braces and escapes its strings hold.
func TestJSONFrames(t *testing.T) {
	frames := []string{
		`{"type":"ADDED","object":{"data":{"k":"}{\"\\"}}}` + "\n",
		`{"type":"MODIFIED","object":{"list":[1,{"a":"]"}]}}` + "\n",
		`{"type":"DELETED","object":{}}`,
	}
	var in bytes.Buffer
	for _, f := range frames {
		in.WriteString(f)
	}
	s := newStreamBody(io.NopCloser(&in), encJSON, request{}, Fault{}, context.Background(), func() {}, nil)
	var got []string
	for {
		f, err := s.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(f))
	}
	if diff := cmp.Diff(frames, got); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
}

func TestJSONFrameCutShort(t *testing.T) {
	s := newStreamBody(io.NopCloser(bytes.NewBufferString(`{"type":"ADDED","obj`)), encJSON, request{}, Fault{}, context.Background(), func() {}, nil)
	if _, err := s.next(); err != io.ErrUnexpectedEOF {
		t.Errorf("half a frame: %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestFaultString(t *testing.T) {
	got := []string{Gone().String(), GoneAfterEvents(3).String(), Status(429, 0).String(), Stall().String(), Cut(1).String(), Slow(2).String(), Truncate(3).String(), Malformed().String(), Fault{}.String()}
	want := []string{"Gone()", "GoneAfterEvents(3)", "Status(429, 0s)", "Stall()", "Cut(1)", "Slow(2)", "Truncate(3)", "Malformed()", "None"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
