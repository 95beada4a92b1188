import LiveDefaults

/// Collects every change an observer receives, as it received it, from any thread: typed values and
/// prior notifications included (``ChangeLog`` keeps property-list values and compares chains).
public final class Recorder<Value: Sendable>: Sendable {
    // `Locked`, not `Mutex`: the thread sanitizer sees its pthread lock (`LIVEDEFAULTS_PTHREAD_LOCKS`).
    private let changes = Locked<[DefaultsChange<Value>]>([])

    /// An empty recorder.
    public init() {}

    /// Every change so far, in the order received.
    public var all: [DefaultsChange<Value>] { changes.withLock { $0 } }
    /// How many changes so far.
    public var count: Int { all.count }
    /// Adds `change`.
    public func record(_ change: DefaultsChange<Value>) { changes.withLock { $0.append(change) } }
}
