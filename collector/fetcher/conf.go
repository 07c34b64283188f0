package fetcher

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// parseConfXML reads a Hadoop configuration file (<configuration> with
// <property><name/><value/></property> children, as in a job's _conf.xml)
// into a map. It streams the XML; the last value of a repeated name wins,
// as in Hadoop. It reads at most maxConfBytes and maxNesting levels of
// elements; past either it returns what it read with an error.
func parseConfXML(r io.Reader) (map[string]string, error) {
	dec := xml.NewDecoder(&capReader{r: r, limit: maxConfBytes})
	dec.Strict = false
	depth := 0
	conf := make(map[string]string)
	var (
		inProp      bool
		field       string
		name, value strings.Builder
		sawRoot     bool
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, errTooBig) {
			err = fmt.Errorf("%w: larger than %d MiB", ErrTooLarge, maxConfBytes>>20)
		}
		if err != nil {
			if sawRoot && len(conf) > 0 {
				return conf, fmt.Errorf("read configuration: %w", err)
			}
			return nil, fmt.Errorf("read configuration: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth++; depth > maxNesting {
				return conf, fmt.Errorf("read configuration: %w: more than %d levels of elements", ErrTooDeep, maxNesting)
			}
			switch t.Name.Local {
			case "configuration":
				sawRoot = true
			case "property":
				inProp = true
				name.Reset()
				value.Reset()
			case "name", "value":
				if inProp {
					field = t.Name.Local
				}
			}
		case xml.CharData:
			switch field {
			case "name":
				name.Write(t)
			case "value":
				value.Write(t)
			}
		case xml.EndElement:
			depth--
			switch t.Name.Local {
			case "name", "value":
				field = ""
			case "property":
				if n := strings.TrimSpace(name.String()); n != "" {
					conf[n] = value.String()
				}
				inProp = false
			}
		}
	}
	if !sawRoot {
		return nil, fmt.Errorf("read configuration: %w: no <configuration> element", ErrUnknownFormat)
	}
	return conf, nil
}
