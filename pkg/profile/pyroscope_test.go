package profile_test

import (
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/pprof/profile"

	"github.com/cachetune/cachetune/internal/leakcheck"
	cprofile "github.com/cachetune/cachetune/pkg/profile"
)

// upload is one profile received by the fake Pyroscope ingest endpoint.
type upload struct {
	app      string
	tags     map[string]string
	profile  *profile.Profile
	user     string
	password string
	tenant   string
}

// ingest is a stand-in for Pyroscope's /ingest: pyroscope-go posts each
// profile as multipart/form-data (a "profile" file, in pprof format) with
// the application and its tags in the query, name=app{k=v,...}.
type ingest struct {
	t       *testing.T
	mu      sync.Mutex
	uploads []upload
}

func (in *ingest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/ingest" || r.Method != http.MethodPost {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	app, tags, err := parseAppName(r.URL.Query().Get("name"))
	if err != nil {
		in.t.Errorf("ingest: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		in.t.Errorf("ingest: content type %q: %v", r.Header.Get("Content-Type"), err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			in.t.Errorf("ingest: multipart: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if part.FormName() != "profile" {
			continue
		}
		p, err := profile.Parse(part)
		if err != nil {
			in.t.Errorf("ingest: profile from %s does not parse: %v", app, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := p.CheckValid(); err != nil {
			in.t.Errorf("ingest: profile from %s is not valid: %v", app, err)
		}
		user, password, _ := r.BasicAuth()
		in.mu.Lock()
		in.uploads = append(in.uploads, upload{app: app, tags: tags, profile: p, user: user, password: password, tenant: r.Header.Get("X-Scope-OrgID")})
		in.mu.Unlock()
	}
}

func (in *ingest) received() []upload {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]upload(nil), in.uploads...)
}

// parseAppName splits "app{k=v,k2=v2}" into the name and its tags.
func parseAppName(name string) (string, map[string]string, error) {
	app, rest, ok := strings.Cut(name, "{")
	tags := map[string]string{}
	if !ok {
		return app, tags, nil
	}
	rest, ok = strings.CutSuffix(rest, "}")
	if !ok {
		return "", nil, &parseError{name}
	}
	for _, kv := range strings.Split(rest, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return "", nil, &parseError{name}
		}
		tags[k] = v
	}
	return app, tags, nil
}

type parseError struct{ name string }

func (e *parseError) Error() string { return "malformed application name " + e.name }

// kind tells the profiles apart by their sample types.
func kind(p *profile.Profile) string {
	for _, st := range p.SampleType {
		switch st.Type {
		case "cpu":
			return "cpu"
		case "inuse_space":
			return "heap"
		case "goroutine", "goroutines":
			return "goroutine"
		}
	}
	return "unknown"
}

//go:noinline
func busyLoop(ctx context.Context, d time.Duration) int {
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range 10000 {
			n += i * i
		}
	}
	return n
}

var busySink int

func TestPyroscopeUploadsTaggedProfiles(t *testing.T) {
	leakcheck.Check(t)
	in := &ingest{t: t}
	srv := httptest.NewServer(in)
	defer srv.Close()

	tags := map[string]string{"cluster": "test", "pod": "controller-0"}
	s, err := cprofile.Start(t.Context(),
		cprofile.WithAddr("127.0.0.1:0"),
		cprofile.WithPyroscope(cprofile.PyroscopeConfig{
			ApplicationName:   "cachetune-test",
			ServerAddress:     srv.URL,
			Tags:              tags,
			UploadRate:        time.Second,
			BasicAuthUser:     "user",
			BasicAuthPassword: "secret",
			TenantID:          "team-a",
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())

	// A second profiler in the same process is refused: the CPU profiler is
	// process-wide.
	if _, err := cprofile.Start(t.Context(), cprofile.WithAddr("127.0.0.1:0"),
		cprofile.WithPyroscope(cprofile.PyroscopeConfig{ApplicationName: "other", ServerAddress: srv.URL})); !errors.Is(err, cprofile.ErrPyroscopeRunning) {
		t.Errorf("second Pyroscope profiler: err %v, want ErrPyroscopeRunning", err)
	}

	// While Pyroscope owns the CPU profiler, /debug/pprof/profile still
	// answers, by borrowing it; the labelled busy loop runs meanwhile.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cprofile.Do(t.Context(), "pods", "pods", func(ctx context.Context) {
			busySink = busyLoop(ctx, 2500*time.Millisecond)
		})
	}()
	status, body := get(t, s, "/debug/pprof/profile?seconds=1")
	if status != http.StatusOK {
		t.Errorf("/debug/pprof/profile with Pyroscope on: status %d: %s", status, truncate(body))
	} else {
		parseProfile(t, "/debug/pprof/profile with Pyroscope on", body)
	}
	wg.Wait()
	runtime.GC() // a GC in the period, so that the heap profile is sent

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	got := in.received()
	kinds := map[string]int{}
	labelled := int64(0)
	for _, u := range got {
		k := kind(u.profile)
		kinds[k]++
		if u.app != "cachetune-test" {
			t.Errorf("%s profile sent as application %q", k, u.app)
		}
		for key, want := range tags {
			if u.tags[key] != want {
				t.Errorf("%s profile has tag %s=%q, want %q (tags %v)", k, key, u.tags[key], want, u.tags)
			}
		}
		if diff := cmp.Diff([]string{"user", "secret", "team-a"}, []string{u.user, u.password, u.tenant}); diff != "" {
			t.Errorf("%s upload credentials (-want +got):\n%s", k, diff)
		}
		if k != "cpu" {
			continue
		}
		for _, smp := range u.profile.Sample {
			if has(smp.Label["informer"], "pods") && has(smp.Label["resource"], "pods") {
				labelled += smp.Value[len(smp.Value)-1]
			}
		}
	}
	t.Logf("uploads by kind %v; CPU labelled informer=pods: %v", kinds, time.Duration(labelled))
	for _, k := range []string{"cpu", "heap", "goroutine"} {
		if kinds[k] == 0 {
			t.Errorf("no %s profile uploaded; got %v", k, kinds)
		}
	}
	// 2.5 s of a busy loop, sampled at 100 Hz; the machine may be shared, so
	// ask only for ten samples' worth.
	if labelled < int64(100*time.Millisecond) {
		t.Errorf("CPU samples labelled informer=pods total %v, want most of the busy loop's 2.5 s", time.Duration(labelled))
	}
}

func has(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}
