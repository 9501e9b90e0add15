package doctor

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// The formats a LIST is asked for.
const (
	formatJSON     = "json"
	formatProtobuf = "protobuf"
)

// lister reads a resource page by page, in JSON or protobuf, and hands each
// page's bytes to the caller undecoded, so that sizes can be taken from what
// the server sent and the time of each request measured without the decoding.
type lister struct {
	json, protobuf rest.Interface
	pageSize       int64
}

func newLister(cfg *rest.Config, pageSize int64) (*lister, error) {
	client := func(accept string) (rest.Interface, error) {
		c := rest.CopyConfig(cfg)
		c.GroupVersion = &schema.GroupVersion{}
		c.APIPath = "/"
		c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
		c.AcceptContentTypes = accept
		c.ContentType = runtime.ContentTypeJSON
		return rest.RESTClientFor(c)
	}
	j, err := client(runtime.ContentTypeJSON)
	if err != nil {
		return nil, err
	}
	p, err := client(runtime.ContentTypeProtobuf)
	if err != nil {
		return nil, err
	}
	return &lister{json: j, protobuf: p, pageSize: pageSize}, nil
}

// resourcePath is the URL path of a resource's collection.
func resourcePath(t target, namespace string) string {
	parts := []string{"/apis", t.gvr.Group, t.gvr.Version}
	if t.gvr.Group == "" {
		parts = []string{"/api", t.gvr.Version}
	}
	if t.namespaced && namespace != "" {
		parts = append(parts, "namespaces", namespace)
	}
	return path.Join(append(parts, t.gvr.Resource)...)
}

// pageFunc handles one page and returns its continue token.
type pageFunc func(raw []byte) (next string, err error)

// list reads every page of t in format, calling each for every page, and
// returns the time the requests took (not the time each spent).
func (l *lister) list(ctx context.Context, t target, namespace, format string, each pageFunc) (Latency, error) {
	lat := Latency{Format: format, PageSize: l.pageSize}
	client := l.json
	if format == formatProtobuf {
		client = l.protobuf
	}
	cont := ""
	for {
		req := client.Get().AbsPath(resourcePath(t, namespace)).Param("limit", strconv.FormatInt(l.pageSize, 10))
		if cont != "" {
			req = req.Param("continue", cont)
		}
		start := time.Now()
		raw, err := req.Do(ctx).Raw()
		took := time.Since(start).Seconds()
		if err != nil {
			return lat, fmt.Errorf("list %s in %s (page %d): %w", t.name(), scope(t, namespace), lat.Pages+1, err)
		}
		if lat.Pages == 0 {
			lat.FirstPageSeconds = took
		}
		lat.Pages++
		lat.AllSeconds += took
		if cont, err = each(raw); err != nil {
			return lat, fmt.Errorf("list %s in %s (page %d): %w", t.name(), scope(t, namespace), lat.Pages, err)
		}
		if cont == "" {
			return lat, nil
		}
	}
}
