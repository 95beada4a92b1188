/// What the codec throws: property-list bytes or text that cannot be read.
///
/// The codec's own error, so that this module depends on nothing of the library's. Its message
/// names the problem and where it is: the line and column of XML or old-style text, or the byte
/// offset in a binary file. The library turns it into a `DefaultsError` with code
/// `malformedPropertyList` where it calls the codec (docs/design.md, "The codec: a module of its own").
package struct PropertyListError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, and where.
    package var message: String

    /// Creates an error with a message naming the problem.
    package init(_ message: String) { self.message = message }

    package var description: String { message }
}
