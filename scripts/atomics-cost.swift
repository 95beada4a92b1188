// What one atomic operation costs on this machine: an uncontended lock and unlock (`Mutex`, and
// `pthread_mutex_t`, the sanitizer builds' lock), an atomic add and compare-and-exchange, and a
// retain and release of an object without and with a side table (one that a weak reference
// points to), the runtime's functions called through `dlsym` so that the optimizer cannot pair
// them away. Each the best of 5 passes of 20 M. docs/performance.md, "Issue 40", the fifth pass.
//
//   swiftc -O scripts/atomics-cost.swift -o /tmp/atomics-cost && /tmp/atomics-cost
import Glibc
import Synchronization

typealias RetainF = @convention(c) (UnsafeMutableRawPointer) -> UnsafeMutableRawPointer
typealias ReleaseF = @convention(c) (UnsafeMutableRawPointer) -> Void
typealias WeakF = @convention(c) (UnsafeMutableRawPointer) -> UnsafeMutableRawPointer?
let handle = dlopen(nil, RTLD_NOW)
let rt_retain = unsafeBitCast(dlsym(handle, "swift_retain")!, to: RetainF.self)
let rt_release = unsafeBitCast(dlsym(handle, "swift_release")!, to: ReleaseF.self)
let rt_weakLoadStrong = unsafeBitCast(dlsym(handle, "swift_weakLoadStrong")!, to: WeakF.self)

@inline(never) func now() -> UInt64 {
    var ts = timespec(); clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}
@inline(never) func opaque<T>(_ x: T) -> T { x }

final class Box { var x = 0 }
final class Holder { weak var w: Box? }

let n = 20_000_000
func time(_ name: String, _ body: (Int) -> Void) -> Double {
    var best = Double.infinity
    for _ in 0..<5 {
        let t0 = now()
        body(n)
        let t1 = now()
        best = min(best, Double(t1 - t0) / Double(n))
    }
    print(name + String(repeating: " ", count: max(1, 44 - name.count)), "\(Double(Int(best*100))/100) ns")
    return best
}

var sink = 0
let mutex = Mutex<Int>(0)
let pm = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
pm.initialize(to: pthread_mutex_t()); pthread_mutex_init(pm, nil)
let atomic = Atomic<Int>(0)
let box = opaque(Box())
let boxP = Unmanaged.passUnretained(box).toOpaque()
struct WeakRef { weak var w: Box? }
let weakStore = UnsafeMutablePointer<WeakRef>.allocate(capacity: 1)
weakStore.initialize(to: WeakRef(w: box))   // box now has a side table
let plain = opaque(Box())
let plainP = Unmanaged.passUnretained(plain).toOpaque()
let weakSlot = UnsafeMutableRawPointer(weakStore)

let empty = time("empty loop (opaque call)") { n in for i in 0..<n { sink &+= opaque(i) } }
_ = time("Mutex lock+unlock") { n in for i in 0..<n { mutex.withLock { $0 &+= i } } }
_ = time("pthread_mutex lock+unlock") { n in for _ in 0..<n { pthread_mutex_lock(pm); sink &+= 1; pthread_mutex_unlock(pm) } }
_ = time("Atomic add (lock xadd)") { n in for _ in 0..<n { atomic.add(1, ordering: .relaxed) } }
_ = time("Atomic CAS") { n in for i in 0..<n { _ = atomic.compareExchange(expected: i, desired: i &+ 1, ordering: .acquiringAndReleasing) } }
_ = time("swift_retain+swift_release (no side table)") { n in for _ in 0..<n { rt_release(rt_retain(plainP)) } }
_ = time("swift_retain+swift_release (side table)") { n in for _ in 0..<n { rt_release(rt_retain(boxP)) } }
_ = time("swift_weakLoadStrong+release") { n in for _ in 0..<n { if let p = rt_weakLoadStrong(weakSlot) { rt_release(p) } } }
_ = time("swift_weakLoadStrong (then 1 release per 16)") { n in for i in 0..<n { _ = rt_weakLoadStrong(weakSlot); if i & 15 == 15 { for _ in 0..<16 { rt_release(boxP) } } } }
_ = time("swift_retain x16 then release x16 (side table), per pair") { n in for _ in 0..<(n/16) { for _ in 0..<16 { _ = rt_retain(boxP) }; for _ in 0..<16 { rt_release(boxP) } } }
print("sink", sink, atomic.load(ordering: .relaxed))
