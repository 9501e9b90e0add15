package bench

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes the report as indented JSON: every figure, every window and
// the heap series of each mode.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadJSON reads a report written by WriteJSON.
func ReadJSON(rd io.Reader) (Report, error) {
	var r Report
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("decode report: %w", err)
	}
	if r.Schema != ReportSchema {
		return r, fmt.Errorf("report schema %d, this cachebench reads schema %d", r.Schema, ReportSchema)
	}
	return r, nil
}
