package reflector

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cachetune/cachetune/internal/wire"
)

// pagedList is one paged LIST of an informer's objects: its pages, read
// through the connection's decoder when the source hands out raw bytes.
type pagedList struct {
	c        *conn
	pageSize int64
	// sizeHint is the last list's length, to size the result once.
	sizeHint int
}

// list lists page by page. Each page's objects are stripped (or replaced by
// the unchanged handed object) and copied out of the page, so the page itself is
// garbage before the next one arrives.
func (pl pagedList) list(ctx context.Context, rv string, pace *Pacer) (listResult, error) {
	var res listResult
	opts := metav1.ListOptions{Limit: pl.pageSize, ResourceVersion: rv}
	if rv != "" {
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	page := pl.decodedPage
	if raw := pl.c.rawSource(); raw != nil {
		page = pl.rawPage(raw, pl.c.newDecoder(ctx, raw))
	}
	for {
		part, cont, err := page(ctx, pl.c.scope(opts), pace)
		if err != nil {
			if opts.Continue != "" && isExpired(err) {
				// The snapshot behind the continue token is gone: start over with
				// a fresh consistent list.
				return pl.list(ctx, "", pace)
			}
			return res, err
		}
		if res.items == nil {
			res.items = make([]runtime.Object, 0, max(pl.sizeHint, len(part.items)))
		}
		res.items = append(res.items, part.items...)
		res.reused += part.reused
		res.rv = part.rv
		if opts.Continue = cont; cont == "" {
			return res, nil
		}
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	}
}

// decodedPage lists one page with the client's own decoder.
func (pl pagedList) decodedPage(ctx context.Context, opts metav1.ListOptions, pace *Pacer) (res listResult, cont string, err error) {
	page, err := pl.c.src.List(ctx, opts)
	if err != nil {
		return res, "", err
	}
	lm, err := meta.ListAccessor(page)
	if err != nil {
		return res, "", fmt.Errorf("list %s: %w", pl.c.gr(), err)
	}
	err = meta.EachListItem(page, func(obj runtime.Object) error {
		kept, reused, err := pl.c.keep(obj, true, pl.c.reuses(ctx))
		if err != nil {
			return err
		}
		if kept == nil { // another shard's (WithShard)
			pl.c.shard.SkippedListed()
			return nil
		}
		if err := pl.c.add(&res, kept, reused); err != nil {
			return err
		}
		pace.Tick()
		return nil
	})
	res.rv = lm.GetResourceVersion()
	return res, lm.GetContinue(), err
}

// rawPage lists pages as protobuf and decodes them with the lean decoder as
// they arrive: a page is never held whole, decoded or encoded.
func (pl pagedList) rawPage(raw RawSource, d *wire.Decoder) func(context.Context, metav1.ListOptions, *Pacer) (listResult, string, error) {
	return func(ctx context.Context, opts metav1.ListOptions, pace *Pacer) (listResult, string, error) {
		body, err := raw.RawList(ctx, opts)
		if err != nil {
			return listResult{}, "", err
		}
		defer body.Close()
		return decodeList(pl.c, d, body, pace)
	}
}
