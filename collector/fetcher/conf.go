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
// as in Hadoop.
func parseConfXML(r io.Reader) (map[string]string, error) {
	dec := xml.NewDecoder(r)
	dec.Strict = false
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
		if err != nil {
			if sawRoot && len(conf) > 0 {
				return conf, fmt.Errorf("read configuration: %w", err)
			}
			return nil, fmt.Errorf("read configuration: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
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
