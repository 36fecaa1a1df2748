// Package runtime runs source and sink tasks: placeholder, written below.
package runtime
