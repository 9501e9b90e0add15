package bench

import (
	"bytes"
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

// ReadJSON reads a report written by WriteJSON, of this schema or an earlier
// one (whose reports lack what later schemas added: it reads as zero).
func ReadJSON(rd io.Reader) (Report, error) {
	data, err := io.ReadAll(rd)
	if err != nil {
		return Report{}, err
	}
	var head struct {
		Schema int `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Report{}, fmt.Errorf("decode report: %w", err)
	}
	if head.Schema < 1 || head.Schema > ReportSchema {
		return Report{}, fmt.Errorf("report schema %d, this cachebench reads schemas 1 to %d", head.Schema, ReportSchema)
	}
	var r Report
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("decode report: %w", err)
	}
	return r, nil
}
