// `PropertyListValue` (and `PropertyListFormat`) are defined in the codec's module and are part of
// this library's API: `import LiveDefaults` gives them (docs/design.md, "The codec: a module of its own").
@_exported import LiveDefaultsPropertyList
