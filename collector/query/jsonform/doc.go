// Package jsonform is the one JSON form of Strata's query answers: the
// objects `strata … -o json` prints, one per line, and the objects the
// collector's /api/v1 answers hold. Each New… function turns one answer of
// the query service (collector/query) into its form; Encoder writes forms.
// A CLI line and the API's element for the same answer are the same bytes.
//
// The form is written for people and their scripts, not for a protobuf
// decoder: addresses (vaddr, paddr) are hex strings ("0x7f0000000000"),
// page frame numbers and counts are JSON numbers, kernel page flags are
// lowercase names ("lru", "anon", "thp"), enums are lowercase names without
// their prefix ("read", "walk_cut", "moderate"), instants are RFC 3339
// strings in UTC ("2023-11-14T22:13:20.5Z"), durations are numbers whose
// name says the unit (runtime_ms, seconds). docs/api.md describes every
// object with an example.
package jsonform
