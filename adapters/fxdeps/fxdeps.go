// Package fxdeps lets fx build the core's use cases and the adapters from their plain
// constructors: a Deps struct is filled field by field from the graph, so neither the core nor
// the adapters know fx and the composition root (cmd/imd) copies no fields.
package fxdeps

import (
	"fmt"
	"reflect"
	"strings"

	"go.uber.org/fx"
)

// Inject returns constructor as fx can call it: each parameter whose type is a struct named
// Deps or …Deps (a use case's or an adapter's ports) is taken field by field from the graph,
// as if the struct embedded fx.In, so the core stays free of fx and cmd/imd copies no fields.
// A field's tags carry over: optional:"true" may stay nil, group:"…" collects a value group.
func Inject(constructor any) any {
	return fill(constructor, func(p reflect.Type) bool { return strings.HasSuffix(p.Name(), "Deps") })
}

// Gather provides a T built from the graph field by field, for the structs an adapter takes
// whole (the HTTP listener's groups of operations).
func Gather[T any]() any {
	return fill(func(t T) T { return t }, func(reflect.Type) bool { return true })
}

// fill is constructor with the struct parameters expand picks taken field by field.
func fill(constructor any, expand func(reflect.Type) bool) any {
	fn := reflect.ValueOf(constructor)
	t := fn.Type()
	if t.Kind() != reflect.Func {
		panic(fmt.Sprintf("fxdeps: %T is not a constructor", constructor))
	}
	in := make([]reflect.Type, t.NumIn())
	deps := make([]bool, t.NumIn())
	for i := range in {
		in[i] = t.In(i)
		if p := t.In(i); p.Kind() == reflect.Struct && expand(p) {
			in[i], deps[i] = paramObject(p), true
		}
	}
	out := make([]reflect.Type, t.NumOut())
	for i := range out {
		out[i] = t.Out(i)
	}
	call := func(args []reflect.Value) []reflect.Value {
		for i, filled := range args {
			if !deps[i] {
				continue
			}
			d := reflect.New(t.In(i)).Elem()
			for f := range d.NumField() {
				d.Field(f).Set(filled.Field(f + 1)) // field 0 is fx.In
			}
			args[i] = d
		}
		return fn.Call(args)
	}
	return reflect.MakeFunc(reflect.FuncOf(in, out, t.IsVariadic()), call).Interface()
}

// paramObject is deps with fx.In embedded first: the same fields, names and tags.
func paramObject(deps reflect.Type) reflect.Type {
	fields := []reflect.StructField{{Name: "In", Type: reflect.TypeFor[fx.In](), Anonymous: true}}
	for i := range deps.NumField() {
		f := deps.Field(i)
		if !f.IsExported() || f.Anonymous {
			panic(fmt.Sprintf("fxdeps: %s.%s is not an exported named field", deps, f.Name))
		}
		fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag})
	}
	return reflect.StructOf(fields)
}

// As provides constructor's result as each of the given types (fx.Self() for its own).
func As(constructor any, types ...any) any {
	each := make([]fx.Annotation, len(types))
	for i, t := range types {
		each[i] = fx.As(t)
	}
	return fx.Annotate(constructor, each...)
}

// View is v as one of the views it also offers, an error when it does not: for a port whose
// adapter also serves narrower ports (the deliver queue's operator, lease and backlog views).
func View[T, V any](v V) (T, error) {
	t, ok := any(v).(T)
	if !ok {
		return t, fmt.Errorf("%T does not offer %s", v, reflect.TypeFor[T]())
	}
	return t, nil
}
