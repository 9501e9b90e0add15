package leanstore

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cachetune/cachetune/internal/reflector"
	"github.com/cachetune/cachetune/internal/wire"
)

// pagedList lists page by page. Each page's objects are stripped (or replaced by
// the unchanged handed object) and copied out of the page, so the page itself is
// garbage before the next one arrives.
func (lw *listWatch) pagedList(ctx context.Context, rv string, pace *reflector.Pacer) (listResult, error) {
	var res listResult
	opts := metav1.ListOptions{Limit: lw.opts.pageSize, ResourceVersion: rv}
	if rv != "" {
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	page := lw.decodedPage
	if raw := lw.rawSource(); raw != nil {
		page = lw.rawPage(raw, lw.newDecoder(ctx, raw))
	}
	for {
		part, cont, err := page(ctx, lw.opts.listOptions(opts), pace)
		if err != nil {
			if opts.Continue != "" && isExpired(err) {
				// The snapshot behind the continue token is gone: start over with
				// a fresh consistent list.
				return lw.pagedList(ctx, "", pace)
			}
			return res, err
		}
		if res.items == nil {
			res.items = make([]runtime.Object, 0, max(lw.listSizeHint(), len(part.items)))
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
func (lw *listWatch) decodedPage(ctx context.Context, opts metav1.ListOptions, pace *reflector.Pacer) (res listResult, cont string, err error) {
	page, err := lw.src.list(ctx, opts)
	if err != nil {
		return res, "", err
	}
	lm, err := meta.ListAccessor(page)
	if err != nil {
		return res, "", fmt.Errorf("list %s: %w", lw.gr(), err)
	}
	err = meta.EachListItem(page, func(obj runtime.Object) error {
		kept, reused, err := lw.keep(obj, true, lw.reuses(ctx))
		if err != nil {
			return err
		}
		if kept == nil { // another shard's (WithShard)
			lw.shard.skippedListed.Add(1)
			return nil
		}
		if reused {
			res.reused++
		}
		res.items = append(res.items, kept)
		pace.Tick()
		return nil
	})
	res.rv = lm.GetResourceVersion()
	return res, lm.GetContinue(), err
}

// rawPage lists pages as protobuf and decodes them with the lean decoder as
// they arrive: a page is never held whole, decoded or encoded.
func (lw *listWatch) rawPage(raw rawSource, d *wire.Decoder) func(context.Context, metav1.ListOptions, *reflector.Pacer) (listResult, string, error) {
	return func(ctx context.Context, opts metav1.ListOptions, pace *reflector.Pacer) (listResult, string, error) {
		body, err := raw.rawList(ctx, opts)
		if err != nil {
			return listResult{}, "", err
		}
		defer body.Close()
		return decodeList(d, body, lw.shard, pace)
	}
}
