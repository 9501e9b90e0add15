// Package inspect finds out what a client-go informer built by a NewFunc
// lists (namespace, resource, selectors) and which indexers it has, without
// sending anything to the API server, so that leanstore's typed factory can
// list the same through its own list and watch.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Request is what an informer lists: the namespace ("" for all), the resource
// and the selectors.
type Request struct {
	Namespace, Resource          string
	LabelSelector, FieldSelector string
}

// NewFunc finds out what the informer newFunc builds lists, without
// sending anything to the API server: it builds the informer with a clientset
// whose transport answers every request locally with an empty list and
// records it, calls the informer's own list function once, and reads the
// request. It also returns the informer's indexers. It fails when the informer
// is not client-go's shared informer (its list function cannot be reached), or
// when its list does not go through the clientset it was given, or lists
// another group version than gv.
func NewFunc(newFunc internalinterfaces.NewInformerFunc, resync time.Duration, gv schema.GroupVersion) (Request, cache.Indexers, error) {
	rec := &inspectTransport{}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://leanstore-probe.invalid", Transport: rec, QPS: -1})
	if err != nil {
		return Request{}, nil, err
	}
	model := newFunc(cs, resync)
	indexers := model.GetIndexer().GetIndexers()
	lw, err := listerWatcherOf(model)
	if err != nil {
		return Request{}, indexers, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = cache.ToListerWatcherWithContext(lw).ListWithContext(ctx, metav1.ListOptions{Limit: 1})
	r := rec.first()
	if r == nil {
		return Request{}, indexers, errors.New("its list does not go through the clientset it is given")
	}
	req, rgv, err := parseRequest(r)
	if err != nil {
		return Request{}, indexers, err
	}
	if rgv != gv {
		return Request{}, indexers, fmt.Errorf("it lists %s, not %s", rgv, gv)
	}
	return req, indexers, nil
}

// parseRequest reads a list request's path and query:
//
//	/api/v1[/namespaces/{ns}]/{resource}
//	/apis/{group}/{version}[/namespaces/{ns}]/{resource}
func parseRequest(r *http.Request) (Request, schema.GroupVersion, error) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var gv schema.GroupVersion
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		gv, parts = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		gv, parts = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		return Request{}, gv, fmt.Errorf("it lists %s, which is no resource path", r.URL.Path)
	}
	var req Request
	if len(parts) == 3 && parts[0] == "namespaces" {
		req.Namespace, parts = parts[1], parts[2:]
	}
	if len(parts) != 1 {
		return Request{}, gv, fmt.Errorf("it lists %s, which is no collection", r.URL.Path)
	}
	q := r.URL.Query()
	req.Resource = parts[0]
	req.LabelSelector, req.FieldSelector = q.Get("labelSelector"), q.Get("fieldSelector")
	return req, gv, nil
}

// listerWatcherOf returns the ListerWatcher inside client-go's shared informer.
// client-go does not export it, so it is read from the unexported field; when
// that field is not there (another client-go version, another implementation
// of the interface), the caller uses the informer itself.
func listerWatcherOf(inf cache.SharedIndexInformer) (cache.ListerWatcher, error) {
	v := reflect.ValueOf(inf)
	for range 4 { // client-go's typed informers wrap the shared informer once
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return nil, fmt.Errorf("%T is nil", inf)
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return nil, fmt.Errorf("%T is not client-go's shared informer", inf)
		}
		if f := v.FieldByName("listerWatcher"); f.IsValid() && f.CanAddr() && f.Type().Implements(reflect.TypeFor[cache.ListerWatcher]()) {
			lw, ok := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(cache.ListerWatcher)
			if !ok || lw == nil {
				return nil, fmt.Errorf("%T has no list function", inf)
			}
			return lw, nil
		}
		next := v.FieldByName("SharedIndexInformer")
		if !next.IsValid() || next.Kind() != reflect.Interface || next.IsNil() {
			break
		}
		v = next.Elem()
	}
	return nil, fmt.Errorf("%T has no list function leanstore can read", inf)
}

// inspectTransport answers every request with an empty list and records the first.
type inspectTransport struct {
	mu   sync.Mutex
	seen *http.Request
}

func (p *inspectTransport) first() *http.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

func (p *inspectTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	if p.seen == nil {
		p.seen = r
	}
	p.mu.Unlock()
	const body = `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`
	return &http.Response{
		StatusCode: http.StatusOK, Request: r, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
	}, nil
}
