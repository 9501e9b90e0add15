package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

func names(ms []Mode) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return strings.Join(out, ",")
}

func TestSelect(t *testing.T) {
	for _, tc := range []struct {
		patterns, want, wantErr string
	}{
		{"client-go/typed/stream", "client-go/typed/stream", ""},
		{"client-go/metadata*/list", "client-go/metadata/list,client-go/metadata-strip-mf/list", ""},
		{"client-go/typed/list, client-go/typed/stream", "client-go/typed/stream,client-go/typed/list", ""}, // registration order
		{"*/typed-json/*", "client-go/typed-json/stream,client-go/typed-json/list", ""},
		{"client-go/typed/?tream", "client-go/typed/stream", ""},
		{"client-go/typed", "", `no mode matches "client-go/typed"`},
		{"client-go/typed/stream,nope", "", `no mode matches "nope"`},
	} {
		got, err := Select(tc.patterns)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Select(%q) error = %v, want %q", tc.patterns, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Select(%q): %v", tc.patterns, err)
			continue
		}
		if names(got) != tc.want {
			t.Errorf("Select(%q) = %s, want %s", tc.patterns, names(got), tc.want)
		}
	}
	for _, tc := range []struct{ patterns, want string }{
		{"client-go/typed/list, client-go/typed/stream", "client-go/typed/list,client-go/typed/stream"},
		{"leanstore/typed-lean/stream,client-go/metadata*/list,client-go/metadata/list", "leanstore/typed-lean/stream,client-go/metadata/list,client-go/metadata-strip-mf/list"}, // a glob's in registration order; a repeat keeps its first place
	} {
		if got, err := SelectAsGiven(tc.patterns); err != nil || names(got) != tc.want {
			t.Errorf("SelectAsGiven(%q) = %s, %v; want %s", tc.patterns, names(got), err, tc.want)
		}
	}
	if _, err := SelectAsGiven("client-go/typed/stream,nope"); err == nil || !strings.Contains(err.Error(), `no mode matches "nope"`) {
		t.Errorf("SelectAsGiven with a pattern that matches nothing: %v", err)
	}
	all, err := Select("all")
	if err != nil || len(all) != len(Modes()) {
		t.Errorf("Select(\"all\") = %d modes, %v; want all %d", len(all), err, len(Modes()))
	}
	def, err := Select("")
	if err != nil {
		t.Fatal(err)
	}
	extra := 0
	for _, m := range Modes() {
		if m.Extra {
			extra++
		}
	}
	for _, m := range def {
		if m.Extra {
			t.Errorf("default set has extra mode %s", m.Name)
		}
	}
	if extra == 0 || len(def) != len(Modes())-extra {
		t.Errorf("Select(\"\") = %d modes; want the %d that are not extra", len(def), len(Modes())-extra)
	}
}

func TestRegisteredModes(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Modes() {
		if seen[m.Name] {
			t.Errorf("mode %s registered twice", m.Name)
		}
		seen[m.Name] = true
		wantStreaming := strings.HasSuffix(m.Name, "/stream")
		if m.Streaming != wantStreaming {
			t.Errorf("mode %s: Streaming = %v", m.Name, m.Streaming)
		}
		if m.Title == "" || m.Start == nil {
			t.Errorf("mode %s has no title or no Start", m.Name)
		}
	}
	widgets := schema.GroupVersionResource{Group: "bench.cachetune.dev", Version: "v1", Resource: "widgets"}
	typed, _ := Lookup("client-go/typed/stream")
	meta, _ := Lookup("client-go/metadata/stream")
	if typed.Supports(widgets) || !typed.Supports(schema.GroupVersionResource{Version: "v1", Resource: "pods"}) {
		t.Error("typed modes must support pods and not a custom resource")
	}
	if meta.Supports != nil && !meta.Supports(widgets) {
		t.Error("metadata-only modes must support custom resources")
	}
}

func TestRegisterRejectsDuplicates(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering a mode twice did not panic")
		}
	}()
	m, _ := Lookup("client-go/typed/stream")
	Register(m)
}

func TestRequestsPath(t *testing.T) {
	for _, tc := range []struct {
		in   Requests
		want string
	}{
		{Requests{WatchList: 3}, "streaming"},
		{Requests{List: 3, Watch: 3}, "LIST"},
		{Requests{List: 1, WatchList: 2, Watch: 1}, "mixed"},
		{Requests{}, "none"},
	} {
		if got := tc.in.Path(); got != tc.want {
			t.Errorf("%+v.Path() = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func podWithExtras() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "p", Namespace: "ns",
		Annotations:   map[string]string{lastApplied: `{"kind":"Pod"}`, "keep": "me"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
	}}
}

func TestStripTransforms(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(any) (any, error)
		want *corev1.Pod
	}{
		{"managedFields", StripManagedFields, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", Annotations: map[string]string{lastApplied: `{"kind":"Pod"}`, "keep": "me"}}}},
		{"managedFields and last-applied", StripManagedFieldsAndLastApplied, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", Annotations: map[string]string{"keep": "me"}}}},
	} {
		once, err := tc.f(podWithExtras())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, once); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
		// Under streaming lists client-go runs a transform twice on an object.
		twice, err := tc.f(once)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, twice); diff != "" {
			t.Errorf("%s applied twice (-want +got):\n%s", tc.name, diff)
		}
		// Tombstones pass through untouched.
		tomb := cache.DeletedFinalStateUnknown{Key: "ns/p"}
		if got, err := tc.f(tomb); err != nil || got != tomb {
			t.Errorf("%s on a tombstone = %v, %v", tc.name, got, err)
		}
	}
}
