package leancache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
)

// controller-runtime's NewInformer hook receives only a ListerWatcher: the
// namespace, label selector and field selector it applies are inside closures.
// To give a leanstore informer exactly that scope, leancache calls the
// ListerWatcher once to list and once to watch with a context that marks the
// calls as probes. The cache's HTTP client is wrapped by probeTransport, which
// answers a marked request itself (an empty list, an empty watch) and records
// its URL; nothing reaches the API server. The URL is then read back into a
// scope, and anything in it that leancache cannot carry over is an error.

type probeKey struct{}

// probe collects the requests of one probe.
type probe struct {
	gvk schema.GroupVersionKind

	mu       sync.Mutex
	requests []*url.URL
}

func (p *probe) record(u *url.URL) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := *u
	p.requests = append(p.requests, &c)
}

func (p *probe) take() []*url.URL {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.requests
	p.requests = nil
	return r
}

// probeTransport answers probe requests locally and passes every other request
// to next.
type probeTransport struct {
	next http.RoundTripper
}

func (t *probeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p, ok := req.Context().Value(probeKey{}).(*probe)
	if !ok {
		return t.next.RoundTrip(req)
	}
	if req.Body != nil {
		_ = req.Body.Close()
	}
	p.record(req.URL)
	body := ""
	if req.URL.Query().Get("watch") != "true" {
		// An empty list of the kind the caller decodes: the metadata client asks
		// for PartialObjectMetadataList, the others for the resource's list kind.
		apiVersion, kind := p.gvk.GroupVersion().String(), p.gvk.Kind+"List"
		if strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadataList") {
			apiVersion, kind = metav1.SchemeGroupVersion.String(), "PartialObjectMetadataList"
		}
		body = fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"resourceVersion":"0"},"items":[]}`, apiVersion, kind)
	}
	return &http.Response{
		Status:        "200 OK",
		StatusCode:    http.StatusOK,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// wrapHTTPClient returns a client that shares hc's transport (and so its
// connections and credentials) and answers probes.
func wrapHTTPClient(hc *http.Client) *http.Client {
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	return &http.Client{
		Transport:     &probeTransport{next: next},
		CheckRedirect: hc.CheckRedirect,
		Jar:           hc.Jar,
		Timeout:       hc.Timeout,
	}
}

// errNoBookmarks: leanstore always asks for bookmarks, which its stalled-watch
// detection relies on, so EnableWatchBookmarks=false cannot be honoured.
var errNoBookmarks = errors.New("watch bookmarks are off (EnableWatchBookmarks=false), but leanstore always asks for them: it tells a quiet watch from a stalled one by them")

// scope is what controller-runtime restricts one informer to.
type scope struct {
	namespace     string
	labelSelector string
	fieldSelector string
}

// probeScope runs lw's list and watch as probes and returns the scope they ask
// for. resource and namespaced come from the REST mapping of gvk.
func probeScope(lw toolscache.ListerWatcher, gvk schema.GroupVersionKind, resource schema.GroupVersionResource, namespaced bool) (scope, error) {
	p := &probe{gvk: gvk}
	ctx := context.WithValue(context.Background(), probeKey{}, p)
	lwc := toolscache.ToListerWatcherWithContext(lw)

	if _, err := lwc.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		return scope{}, fmt.Errorf("probe the list of %s: %w", gvk, err)
	}
	list, err := oneRequest(p.take(), "list", gvk)
	if err != nil {
		return scope{}, err
	}
	w, err := lwc.WatchWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		return scope{}, fmt.Errorf("probe the watch of %s: %w", gvk, err)
	}
	w.Stop()
	watch, err := oneRequest(p.take(), "watch", gvk)
	if err != nil {
		return scope{}, err
	}

	ls, err := parseScope(list, resource, namespaced, false)
	if err != nil {
		return scope{}, fmt.Errorf("the list of %s: %w", gvk, err)
	}
	ws, err := parseScope(watch, resource, namespaced, true)
	if err != nil {
		return scope{}, fmt.Errorf("the watch of %s: %w", gvk, err)
	}
	if ls != ws {
		return scope{}, fmt.Errorf("%s: controller-runtime lists %+v but watches %+v; leanstore lists and watches one scope", gvk, ls, ws)
	}
	return ls, nil
}

func oneRequest(reqs []*url.URL, what string, gvk schema.GroupVersionKind) (*url.URL, error) {
	if len(reqs) != 1 {
		return nil, fmt.Errorf("probe the %s of %s: the ListerWatcher made %d requests through the cache's HTTP client, want 1", what, gvk, len(reqs))
	}
	return reqs[0], nil
}

// parseScope reads a list or watch URL of resource back into a scope. The path
// must be the resource's, cluster-wide or in one namespace; the query may hold
// only the selectors (and, for a watch, the watch flag and bookmarks, which
// leanstore always asks for).
func parseScope(u *url.URL, resource schema.GroupVersionResource, namespaced, watch bool) (scope, error) {
	var s scope
	gvPath := "/apis/" + resource.Group + "/" + resource.Version
	if resource.Group == "" {
		gvPath = "/api/" + resource.Version
	}
	rest, ok := strings.CutSuffix(u.Path, "/"+resource.Resource)
	if !ok {
		return s, fmt.Errorf("request path %s is not of resource %s", u.Path, resource)
	}
	if !strings.HasSuffix(rest, gvPath) {
		i := strings.LastIndex(rest, "/namespaces/")
		if i < 0 || !namespaced || !strings.HasSuffix(rest[:i], gvPath) {
			return s, fmt.Errorf("request path %s is not of resource %s", u.Path, resource)
		}
		s.namespace = rest[i+len("/namespaces/"):]
		if s.namespace == "" || strings.Contains(s.namespace, "/") {
			return s, fmt.Errorf("request path %s has no valid namespace", u.Path)
		}
	}
	bookmarks := false
	for k, v := range u.Query() {
		if len(v) != 1 {
			return s, fmt.Errorf("query parameter %s given %d times", k, len(v))
		}
		switch {
		case k == "labelSelector":
			s.labelSelector = v[0]
		case k == "fieldSelector":
			s.fieldSelector = v[0]
		case watch && k == "watch" && v[0] == "true":
		case watch && k == "allowWatchBookmarks" && v[0] == "true":
			bookmarks = true
		default:
			return s, fmt.Errorf("query parameter %s=%s has no leanstore equivalent", k, v[0])
		}
	}
	if watch && !bookmarks {
		return s, errNoBookmarks
	}
	return s, nil
}
