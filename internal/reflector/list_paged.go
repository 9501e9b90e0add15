package reflector

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cachetune/cachetune/internal/wire"
)

// pagedList lists page by page. Each page's objects are stripped (or replaced by
// the unchanged handed object) and copied out of the page, so the page itself is
// garbage before the next one arrives.
func (ls *lister) pagedList(ctx context.Context, rv string, pace *Pacer) (listResult, error) {
	var res listResult
	opts := metav1.ListOptions{Limit: ls.pageSize, ResourceVersion: rv}
	if rv != "" {
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	page := ls.decodedPage
	if raw := ls.c.rawSource(); raw != nil {
		page = ls.rawPage(raw, ls.c.newDecoder(ctx, raw))
	}
	for {
		part, cont, err := page(ctx, ls.c.scope(opts), pace)
		if err != nil {
			if opts.Continue != "" && isExpired(err) {
				// The snapshot behind the continue token is gone: start over with
				// a fresh consistent list.
				return ls.pagedList(ctx, "", pace)
			}
			return res, err
		}
		if res.items == nil {
			res.items = make([]runtime.Object, 0, max(ls.sizeHint(), len(part.items)))
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
func (ls *lister) decodedPage(ctx context.Context, opts metav1.ListOptions, pace *Pacer) (res listResult, cont string, err error) {
	page, err := ls.c.src.List(ctx, opts)
	if err != nil {
		return res, "", err
	}
	lm, err := meta.ListAccessor(page)
	if err != nil {
		return res, "", fmt.Errorf("list %s: %w", ls.c.gr(), err)
	}
	err = meta.EachListItem(page, func(obj runtime.Object) error {
		kept, reused, err := ls.c.keep(obj, true, ls.c.reuses(ctx))
		if err != nil {
			return err
		}
		if kept == nil { // another shard's (WithShard)
			ls.c.shard.SkippedListed()
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
func (ls *lister) rawPage(raw RawSource, d *wire.Decoder) func(context.Context, metav1.ListOptions, *Pacer) (listResult, string, error) {
	return func(ctx context.Context, opts metav1.ListOptions, pace *Pacer) (listResult, string, error) {
		body, err := raw.RawList(ctx, opts)
		if err != nil {
			return listResult{}, "", err
		}
		defer body.Close()
		return decodeList(d, body, ls.c.shard, pace)
	}
}
