// Package docs tests the repository's Markdown: every relative link names
// a file inside the repository, and every #anchor a heading of the page it
// points at, as GitHub renders them.
package docs
