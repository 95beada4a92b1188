#!/usr/bin/python3
"""The console in a real browser: headless Chromium driven by Selenium (docs/console.md).

Run by Tests/ConsoleTests/ConsoleBrowserTests.swift (`swift test`), and by the benchmark's console row.

    console_browser.py test  --bin <products dir> --work <empty temp dir> [--screenshots <dir>]
    console_browser.py bench --bin <products dir> --work <empty temp dir> --samples <n>

Everything lives under --work: the suites (XDG_CONFIG_HOME), system-wide and managed files, schemas,
HOME and the browser's profile; nothing outside it is read or written. One browser session serves
every case. Prints one line per case, `PASS <case>` or `FAIL <case>: <why>`, and `MEASURE <name>
<value>` lines; exits 1 when a case failed, 3 when the browser or Selenium is missing.
"""
import argparse
import json
import os
import plistlib
import signal
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.request

XSS = "<img src=x onerror=alert(1)>"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["test", "bench"])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--screenshots")
    parser.add_argument("--samples", type=int, default=50)
    # Under the thread sanitizer every process of the chain (defaults, the console) runs 5-15 times slower.
    parser.add_argument("--sanitized", action="store_true")
    options = parser.parse_args()
    try:
        from selenium import webdriver  # noqa: F401
    except ImportError:
        print("MISSING python3-selenium is not installed (scripts/setup.sh installs it)")
        sys.exit(3)
    for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"]:
        if not os.access(tool, os.X_OK):
            print(f"MISSING {tool} is not installed (scripts/setup.sh installs chromium and chromium-driver)")
            sys.exit(3)
    session = Session(options)
    try:
        session.start()
        ok = session.run_tests() if options.mode == "test" else session.run_bench(options.samples)
    finally:
        session.close()
    sys.exit(0 if ok else 1)


class Session:
    def __init__(self, options):
        self.options = options
        self.work = options.work
        self.bin = options.bin
        self.config = os.path.join(self.work, "config")
        self.system = os.path.join(self.work, "xdg")
        self.managed = os.path.join(self.work, "managed")
        self.data = os.path.join(self.work, "data")
        self.home = os.path.join(self.work, "home")
        for directory in [self.config, self.system, self.managed, self.home,
                          os.path.join(self.data, "livedefaults", "schemas")]:
            os.makedirs(directory, exist_ok=True)
        self.environment = dict(os.environ)
        self.environment.update({
            "XDG_CONFIG_HOME": self.config, "XDG_CONFIG_DIRS": self.system,
            "LIVEDEFAULTS_MANAGED_DIR": self.managed, "XDG_DATA_HOME": self.data,
            "XDG_DATA_DIRS": os.path.join(self.work, "no-system-data"), "HOME": self.home,
            "XDG_CACHE_HOME": os.path.join(self.home, "cache"),
        })
        self.console = None
        self.driver = None
        self.helpers = []
        self.failed = False

    # MARK: set-up

    def seed(self):
        def write(directory, suite, values):
            with open(os.path.join(directory, suite + ".plist"), "wb") as file:
                plistlib.dump(values, file, fmt=plistlib.FMT_BINARY)
            os.chmod(os.path.join(directory, suite + ".plist"), 0o644)

        schema = {"format": 1, "suite": "com.example.app", "keys": {
            "fontSize": {"type": "integer", "default": 14, "range": {"min": 8, "max": 72},
                         "summary": "The editor's font size, in points."},
            "theme": {"type": "string", "choices": ["light", "dark", "sepia"], "default": "light",
                      "summary": "The colour theme."},
            "spellCheck": {"type": "boolean", "default": True, "summary": "Underline misspelt words."},
            "apiToken": {"type": "string", "secret": True, "summary": "The sync service's token."},
            "homepage": {"type": "string", "summary": "The page a new window opens."},
            "rateLimit": {"type": "dictionary", "summary": "Requests allowed to the sync service.",
                          "fields": {"perSecond": {"type": "integer", "range": {"min": 1, "max": 10000}},
                                     "burst": {"type": "integer"}}},
        }}
        with open(os.path.join(self.data, "livedefaults", "schemas", "com.example.app.plist"), "wb") as file:
            plistlib.dump(schema, file)
        write(self.config, "com.example.app", {
            "fontSize": 14, "theme": "dark", "spellCheck": True, "apiToken": "s3cr3t-t0ken",
            "homepage": "https://example.org", "rateLimit": {"perSecond": 40, "burst": 3},
        })
        write(self.system, "com.example.app", {"homepage": "https://site.example", "fontSize": 12})
        write(self.managed, "com.example.app", {"homepage": "https://intranet.example"})
        write(self.config, "com.example.xss", {XSS: XSS, "plain": [XSS, {XSS: XSS}]})
        write(self.config, "com.example.big", {f"key{index:04d}": f"value {index}" for index in range(1000)})
        write(self.config, "com.example.bench", {"counter": -1})

    def start(self):
        self.seed()
        if self.options.mode == "test":
            self.start_etcd()
        self.start_console()
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1280,860", "--no-first-run", "--disable-extensions",
                         "--user-data-dir=" + os.path.join(self.work, "chromium-profile")]:
            options.add_argument(argument)
        # The browser and its driver get HOME and XDG_CONFIG_HOME under --work, like everything else.
        os.environ.update({key: self.environment[key] for key in ["HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"]})
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        self.driver.set_script_timeout(10)

    def start_etcd(self):
        """A member of the test's own on loopback (stopped by its PID in close()), when etcd is installed."""
        self.etcd = None
        self.fleet_url = None
        binary = next((path for path in ["/usr/bin/etcd", "/usr/local/bin/etcd"] if os.access(path, os.X_OK)), None)
        if binary is None:
            return
        import socket
        ports = []
        for _ in range(2):
            probe = socket.socket()
            probe.bind(("127.0.0.1", 0))
            ports.append(probe.getsockname()[1])
            probe.close()
        client = f"http://127.0.0.1:{ports[0]}"
        self.etcd = subprocess.Popen(
            [binary, "--data-dir", os.path.join(self.work, "etcd"), "--listen-client-urls", client,
             "--advertise-client-urls", client, "--listen-peer-urls", f"http://127.0.0.1:{ports[1]}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{ports[1]}",
             "--initial-cluster", f"default=http://127.0.0.1:{ports[1]}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.environment)
        self.wait(lambda: urllib.request.urlopen(client + "/health", timeout=1).status == 200, 30, "etcd answers")
        self.fleet_url = f"etcd://127.0.0.1:{ports[0]}/com.example.fleet"
        result = self.defaults("write", self.fleet_url, "theme", "-string", "dark")
        assert result.returncode == 0, result.stderr

    def start_console(self, port=0):
        # A token file, so that the console started again keeps its URL (lost_connection).
        self.console = subprocess.Popen(
            [os.path.join(self.bin, "livedefaults-console"), "--port", str(port),
             "--token-file", os.path.join(self.work, "token")] + ([self.fleet_url] if self.fleet_url else []),
            env=self.environment,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.console.stdout.readline()
        if "?token=" not in line:
            raise RuntimeError("the console printed no URL: " + line + self.console.stderr.read())
        self.url = line.strip().split(": ", 1)[1]
        self.base = self.url.split("?", 1)[0].rstrip("/")
        self.token = self.url.split("token=", 1)[1]
        self.cookie = f"livedefaults-console-{self.base.rsplit(':', 1)[1]}={self.token}"

    def close(self):
        for helper in self.helpers:
            if helper.poll() is None:
                helper.kill()
                helper.wait()
        if self.driver is not None:
            self.driver.quit()
        if getattr(self, "etcd", None) is not None and self.etcd.poll() is None:
            self.etcd.terminate()
            try:
                self.etcd.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.etcd.kill()
                self.etcd.wait()
        if self.console is not None and self.console.poll() is None:
            self.console.send_signal(signal.SIGTERM)
            try:
                self.console.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.console.kill()
                self.console.wait()

    # MARK: helpers

    def defaults(self, *arguments):
        return subprocess.run([os.path.join(self.bin, "defaults"), *arguments], env=self.environment,
                              capture_output=True, text=True)

    def suite_file(self, suite):
        return os.path.join(self.config, suite + ".plist")

    def wait(self, condition, seconds, what):
        """Waits until condition() is truthy, for at most `seconds`; fails naming `what`."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                value = condition()
            except Exception:  # an element replaced while it was read: try again
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"within {seconds} s: {what}")
            time.sleep(0.01)

    def select(self, suite):
        from selenium.webdriver.common.by import By
        button = self.wait(lambda: self.driver.find_element(By.CSS_SELECTOR, f'nav button[data-domain="{suite}"]'),
                           10, f"the domain {suite} is listed")
        button.click()
        self.wait(lambda: self.driver.execute_script(
            "const h = document.querySelector('#heading h2'); return h && h.firstChild.textContent === arguments[0]",
            suite), 10, f"the domain {suite} is shown")

    def row(self, key):
        from selenium.webdriver.common.by import By
        for element in self.driver.find_elements(By.CSS_SELECTOR, "#rows tr.row"):
            if element.get_attribute("data-key") == key:
                return element
        return None

    def value_text(self, key):
        """The text of the value cell in the row of `key`, or None: found and read in one script, so
        that the page re-rendering its rows in between (it does while it tries to reconnect) cannot
        leave a stale element."""
        return self.driver.execute_script(
            "const row = [...document.querySelectorAll('#rows tr.row')]"
            ".find((element) => element.getAttribute('data-key') === arguments[0]);"
            "return row ? row.querySelector('td.value').firstChild.textContent : null", key)

    def expand(self, key):
        from selenium.webdriver.common.by import By
        self.wait(lambda: self.row(key), 10, f"the row {key} is shown").click()
        return self.wait(lambda: next((element for element in self.driver.find_elements(By.CSS_SELECTOR, "tr.details")
                                       if element.get_attribute("data-details") == key), None),
                         10, f"the details of {key} open")

    def details(self, key):
        from selenium.webdriver.common.by import By
        return next((element for element in self.driver.find_elements(By.CSS_SELECTOR, "tr.details")
                     if element.get_attribute("data-details") == key), None)

    def screenshot(self, name):
        if self.options.screenshots:
            self.driver.save_screenshot(os.path.join(self.options.screenshots, name))

    def request(self, path, method="GET", headers=None, body=None):
        request = urllib.request.Request(self.base + path, method=method, headers=headers or {},
                                         data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def case(self, name, body):
        try:
            body()
            print(f"PASS {name}", flush=True)
        except Exception as error:
            self.failed = True
            detail = str(error).replace("\n", " ")[:600]
            print(f"FAIL {name}: {type(error).__name__}: {detail}", flush=True)
            traceback.print_exc(file=sys.stderr)

    # MARK: the cases

    def run_tests(self):
        self.case("opensWithTokenAndListsDomains", self.opens_with_token)
        self.case("refusesWithoutTokenAndCrossOrigin", self.refuses_without_token)
        self.case("formEditReachesFileAndAnotherProcess", self.form_edit)
        self.case("shellWriteUpdatesThePage", self.shell_write)
        self.case("invalidValueShowsErrorAndChangesNothing", self.invalid_value)
        self.case("forcedKeyIsReadOnly", self.forced_key)
        self.case("secretHiddenUntilRevealed", self.secret)
        self.case("historyAndRollback", self.history_and_rollback)
        self.case("searchFindsNestedValues", self.search)
        self.case("markupShowsAsText", self.markup_as_text)
        self.case("thousandKeysRender", self.thousand_keys)
        if self.fleet_url:
            self.case("fleetSuiteIsShownLive", self.fleet_suite)
        else:
            print("SKIP fleetSuiteIsShownLive: etcd is not installed", flush=True)
        self.case("reconnectingPageCatchesUp", self.lost_connection)
        return not self.failed

    def opens_with_token(self):
        from selenium.webdriver.common.by import By
        self.driver.get(self.url)
        listed = self.wait(lambda: [button.get_attribute("data-domain")
                                    for button in self.driver.find_elements(By.CSS_SELECTOR, "nav button")],
                           10, "the domains are listed")
        for suite in ["com.example.app", "com.example.xss", "com.example.big"]:
            assert suite in listed, f"{suite} is not among {listed}"
        # The token left the address bar; the cookie holds it.
        assert "token" not in self.driver.current_url, self.driver.current_url
        self.wait(lambda: self.driver.find_element(By.ID, "status").text == "live", 10, "the page is live")
        self.select("com.example.app")
        self.expand("rateLimit")
        self.screenshot("console-overview.png")

    def refuses_without_token(self):
        before = open(self.suite_file("com.example.app"), "rb").read()
        for path in ["/", "/api/snapshot?domain=com.example.app", "/api/events", "/console.js"]:
            status, _ = self.request(path)
            assert status == 403, f"GET {path} without the token answered {status}"
        status, _ = self.request("/?token=" + "0" * 64)
        assert status == 403, f"a wrong token answered {status}"
        cookie = {"Cookie": self.cookie, "Content-Type": "application/json"}
        edit = {"domain": "com.example.app", "key": "fontSize", "kind": "text", "text": "30"}
        status, text = self.request("/api/write", "POST", {**cookie, "Origin": "http://evil.example"}, edit)
        assert status == 403, f"a cross-origin POST answered {status}: {text}"
        status, text = self.request("/api/write", "POST", cookie, edit)
        assert status == 403, f"a POST without an Origin answered {status}: {text}"
        assert open(self.suite_file("com.example.app"), "rb").read() == before, "a refused request changed the file"
        # The same request from the console's own origin goes through: the refusals above were the origin's.
        status, text = self.request("/api/write", "POST", {**cookie, "Origin": self.base}, edit)
        assert status == 200, f"a same-origin POST answered {status}: {text}"

    def form_edit(self):
        from selenium.webdriver.common.by import By
        helper = subprocess.Popen([os.path.join(self.bin, "TestHelper"), "watch-key", self.config, "com.example.app",
                                   "fontSize"], env=self.environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        self.helpers.append(helper)
        assert helper.stdout.readline().startswith("ready"), "the observer process did not start"
        details = self.details("fontSize") or self.expand("fontSize")
        field = details.find_element(By.CSS_SELECTOR, "input[type=number]")
        field.clear()
        field.send_keys("21")
        details.find_element(By.CSS_SELECTOR, "button.save").click()
        self.wait(lambda: self.defaults("read", "com.example.app", "fontSize").stdout.strip() == "21", 10,
                  "defaults read shows the value saved in the page")
        line = helper.stdout.readline().strip()
        assert line == "changed 21", f"the other process's observer printed {line!r}"
        helper.stdin.write("quit\n")
        helper.stdin.close()
        helper.wait(timeout=10)

    def shell_write(self):
        result = self.defaults("write", "com.example.app", "theme", "sepia")
        assert result.returncode == 0, result.stderr
        written = time.monotonic()
        deadline = 5.0 if self.options.sanitized else 1.0
        self.wait(lambda: self.value_text("theme") == "sepia", deadline, "the page shows the shell's write")
        print(f"MEASURE shellWriteToPageMilliseconds {(time.monotonic() - written) * 1000:.0f}", flush=True)

    def invalid_value(self):
        from selenium.webdriver.common.by import By
        before = open(self.suite_file("com.example.app"), "rb").read()
        details = self.details("fontSize") or self.expand("fontSize")
        field = details.find_element(By.CSS_SELECTOR, "input[type=number]")
        field.clear()
        field.send_keys("500")
        details.find_element(By.CSS_SELECTOR, "button.save").click()
        error = self.wait(lambda: self.details("fontSize").find_element(By.CSS_SELECTOR, ".error").text, 10,
                          "an inline error")
        assert "fontSize" in error and "72" in error, f"the error does not name the key and the range: {error}"
        assert open(self.suite_file("com.example.app"), "rb").read() == before, "the refused edit changed the file"
        assert self.value_text("fontSize") == "21", "the page shows the refused value"
        self.screenshot("console-refusal.png")

    def forced_key(self):
        from selenium.webdriver.common.by import By
        if self.details("fontSize"):
            self.row("fontSize").click()  # folded, so that the screenshot shows this key's details
        details = self.expand("homepage")
        note = details.find_element(By.CSS_SELECTOR, ".readonly").text
        assert os.path.join(self.managed, "com.example.app.plist") in note, f"the note names no file: {note}"
        assert self.row("homepage").find_elements(By.CSS_SELECTOR, ".badge.forced"), "no forced badge"
        field = details.find_element(By.CSS_SELECTOR, ".edit input")
        assert not field.is_enabled(), "the forced key's field can be edited"
        assert not details.find_element(By.CSS_SELECTOR, "button.save").is_enabled(), "Save is enabled"
        assert self.value_text("homepage") == '"https://intranet.example"', self.value_text("homepage")
        layers = [item.text for item in details.find_elements(By.CSS_SELECTOR, ".layers li")]
        assert len(layers) == 3 and layers[0].startswith("managed"), f"the layers: {layers}"
        before = open(self.suite_file("com.example.app"), "rb").read()
        # Around the page: the command's rule refuses it too.
        status, text = self.request("/api/write", "POST", {
            "Cookie": self.cookie, "Content-Type": "application/json", "Origin": self.base,
        }, {"domain": "com.example.app", "key": "homepage", "kind": "string", "text": "https://elsewhere"})
        assert status == 422 and "forced" in text, f"a write of the forced key answered {status}: {text}"
        assert open(self.suite_file("com.example.app"), "rb").read() == before, "the forced key's file changed"
        self.screenshot("console-forced.png")
        # A shadowed layer changes (the system-wide file, renamed over): the page's list of layers follows,
        # though the value that wins is the same.
        system = os.path.join(self.system, "com.example.app.plist")
        with open(system + ".new", "wb") as file:
            plistlib.dump({"homepage": "https://site2.example", "fontSize": 12}, file, fmt=plistlib.FMT_BINARY)
        os.chmod(system + ".new", 0o644)
        os.replace(system + ".new", system)
        self.wait(lambda: any("https://site2.example" in item.text for item in
                              self.details("homepage").find_elements(By.CSS_SELECTOR, ".layers li")),
                  10, "the shadowed system-wide value is updated in the layers")

    def secret(self):
        from selenium.webdriver.common.by import By
        assert self.value_text("apiToken") == "<secret>", self.value_text("apiToken")
        assert "s3cr3t" not in self.driver.page_source, "the secret is in the page"
        details = self.expand("apiToken")
        details.find_element(By.CSS_SELECTOR, "button.reveal").click()
        self.wait(lambda: self.value_text("apiToken") == '"s3cr3t-t0ken"' or self.value_text("apiToken") == "s3cr3t-t0ken",
                  10, "the secret is revealed")
        self.details("apiToken").find_element(By.CSS_SELECTOR, "button.reveal").click()
        self.wait(lambda: self.value_text("apiToken") == "<secret>", 10, "the secret is hidden again")

    def history_and_rollback(self):
        from selenium.webdriver.common.by import By
        for value in ["first motto", "second motto"]:
            result = self.defaults("write", "com.example.app", "motto", value)
            assert result.returncode == 0, result.stderr
        self.wait(lambda: self.value_text("motto") in ('"second motto"', "second motto"), 10,
                  "the page shows the second write")

        def entries():
            return [(item.find_element(By.CSS_SELECTOR, "code.old").text,
                     item.find_element(By.CSS_SELECTOR, "code.new").text,
                     item.find_element(By.CSS_SELECTOR, ".origin").text)
                    for item in self.details("motto").find_elements(By.CSS_SELECTOR, ".history li")]
        for element in self.driver.find_elements(By.CSS_SELECTOR, "tr.details"):  # only this key open (screenshot)
            self.row(element.get_attribute("data-details")).click()
        self.expand("motto")
        shown = self.wait(lambda: len(entries()) == 2 and entries(), 10, "the key's two changes are listed")
        assert [entry[:2] for entry in shown] == [("first motto", "second motto"), ("(none)", "first motto")], shown
        who = self.details("motto").find_element(By.CSS_SELECTOR, ".history li .who").text
        assert "defaults write com.example.app motto" in who, f"the writer is not named: {who}"
        # Roll back to the first write: the value it set is restored.
        self.details("motto").find_elements(By.CSS_SELECTOR, ".history li button.rollback")[1].click()
        self.wait(lambda: self.defaults("read", "com.example.app", "motto").stdout.strip() == "first motto", 10,
                  "defaults read shows the value from before the second write")
        with open(self.suite_file("com.example.app"), "rb") as file:
            held = plistlib.load(file).get("motto")
        assert held == "first motto", f"the file holds {held!r}"
        self.wait(lambda: self.value_text("motto") in ('"first motto"', "first motto"), 10,
                  "the page shows the restored value")
        self.wait(lambda: len(entries()) == 3 and entries()[0] == ("second motto", "first motto", "rollback"), 10,
                  "the rollback is the newest change in the page's history")
        # A forced key is not rolled back, even by a request made around the page.
        before = open(self.suite_file("com.example.app"), "rb").read()
        status, text = self.request("/api/rollback", "POST", {
            "Cookie": self.cookie, "Content-Type": "application/json", "Origin": self.base,
        }, {"domain": "com.example.app", "key": "homepage", "entry": 1})
        assert status == 422 and "forced" in text, f"a rollback of the forced key answered {status}: {text}"
        assert open(self.suite_file("com.example.app"), "rb").read() == before, "the forced key's file changed"
        self.driver.execute_script("arguments[0].scrollIntoView()", self.row("motto"))
        self.screenshot("console-history.png")
        self.row("motto").click()  # folded again for the cases after this one

    def search(self):
        from selenium.webdriver.common.by import By
        box = self.driver.find_element(By.ID, "search")
        box.send_keys("burst")
        visible = self.wait(lambda: [row.get_attribute("data-key") for row in
                                     self.driver.find_elements(By.CSS_SELECTOR, "#rows tr.row") if row.is_displayed()],
                            10, "a row matches")
        assert visible == ["rateLimit"], f"rows shown for 'burst': {visible}"
        where = self.row("rateLimit").find_element(By.CSS_SELECTOR, ".matches").text
        assert "burst" in where, f"the match is not named: {where}"
        self.screenshot("console-search.png")
        box.clear()
        box.send_keys(" ")
        box.clear()
        self.driver.execute_script("document.getElementById('search').dispatchEvent(new Event('input'))")

    def markup_as_text(self):
        from selenium.webdriver.common.by import By
        from selenium.common.exceptions import NoAlertPresentException
        self.select("com.example.xss")
        self.wait(lambda: self.row(XSS), 10, "the key with markup is listed")
        assert self.driver.execute_script(
            "return arguments[0].querySelector('td.key').firstChild.textContent", self.row(XSS)) == XSS
        assert XSS in self.value_text(XSS), self.value_text(XSS)
        self.expand("plain")
        self.expand(XSS)
        assert self.driver.find_elements(By.CSS_SELECTOR, "main img") == [], "markup became an element"
        assert self.driver.execute_script("return document.querySelectorAll('img').length") == 0
        try:
            self.driver.switch_to.alert
            raise AssertionError("an alert opened")
        except NoAlertPresentException:
            pass
        tree = self.details("plain").find_element(By.CSS_SELECTOR, ".tree").text
        assert tree.count(XSS) >= 3, f"the nested markup is not shown as text: {tree}"

    def thousand_keys(self):
        started = time.monotonic()
        self.select("com.example.big")
        self.wait(lambda: self.driver.execute_script("return document.querySelectorAll('#rows tr.row').length") == 1000,
                  30, "1,000 rows are shown")
        shown = (time.monotonic() - started) * 1000
        render = self.driver.execute_script("return window.__liveDefaults.lastRenderMilliseconds")
        print(f"MEASURE thousandKeysRenderMilliseconds {render:.1f}", flush=True)
        print(f"MEASURE thousandKeysClickToRowsMilliseconds {shown:.0f}", flush=True)

    def fleet_suite(self):
        from selenium.webdriver.common.by import By
        self.select(self.fleet_url)
        self.wait(lambda: self.value_text("theme") == "dark", 10, "the fleet suite's value")
        state = self.wait(lambda: self.driver.find_element(By.ID, "fleet-state").text, 10, "the connection state")
        assert "live" in state, state
        # A write from a shell, through etcd.
        result = self.defaults("write", self.fleet_url, "theme", "-string", "sepia")
        assert result.returncode == 0, result.stderr
        self.wait(lambda: self.value_text("theme") == "sepia", 10, "the page shows etcd's change")
        # An edit on the page goes to etcd.
        details = self.expand("theme")
        field = details.find_element(By.CSS_SELECTOR, ".edit input")
        field.clear()
        field.send_keys("light")
        details.find_element(By.CSS_SELECTOR, "button.save").click()
        self.wait(lambda: self.defaults("read", self.fleet_url, "theme").stdout.strip() == "light", 10,
                  "etcd holds the page's edit")
        self.wait(lambda: self.value_text("theme") == "light", 10, "the page shows its own edit")
        self.screenshot("console-fleet.png")

    def lost_connection(self):
        from selenium.webdriver.common.by import By
        self.select("com.example.app")
        self.console.send_signal(signal.SIGTERM)
        self.console.wait(timeout=10)
        self.wait(lambda: self.driver.find_element(By.ID, "status").text != "live", 10, "the page notices")
        banner = self.wait(lambda: self.driver.find_element(By.CSS_SELECTOR, "main .banner").text, 10, "a banner")
        assert "may have changed" in banner, banner
        assert "stale" in self.driver.find_element(By.ID, "main").get_attribute("class")
        assert self.driver.execute_script(
            "return [...document.querySelectorAll('main input, main button, main select, main textarea')]"
            ".every((element) => element.disabled)"), "a control is enabled while the page is not connected"
        self.screenshot("console-disconnected.png")
        # A change while the page cannot hear of it; then the console again, on the same port and token.
        result = self.defaults("write", "com.example.app", "theme", "light")
        assert result.returncode == 0, result.stderr
        assert self.value_text("theme") == "sepia", "the page changed while it was not connected"
        port = int(self.base.rsplit(":", 1)[1])
        self.start_console(port)
        self.wait(lambda: self.driver.find_element(By.ID, "status").text == "live", 15, "the page reconnects")
        self.wait(lambda: self.value_text("theme") == "light", 10, "the page catches up with the change it missed")
        assert not self.driver.find_elements(By.CSS_SELECTOR, "main .banner"), "the banner stays"
        # And it is live again: a change now arrives as an event.
        result = self.defaults("write", "com.example.app", "theme", "dark")
        assert result.returncode == 0, result.stderr
        self.wait(lambda: self.value_text("theme") == "dark", 10, "a change after the reconnection")

    # MARK: the benchmark

    def run_bench(self, samples):
        """File rename to page update: a new file renamed over the suite's, until the page shows its value."""
        self.driver.get(self.url)
        self.select("com.example.bench")
        self.wait(lambda: self.row("counter"), 10, "the counter row")
        latencies = []
        path = self.suite_file("com.example.bench")
        for index in range(samples):
            temporary = path + ".new"
            with open(temporary, "wb") as file:
                plistlib.dump({"counter": index}, file, fmt=plistlib.FMT_BINARY)
            renamed = time.time() * 1000
            os.replace(temporary, path)
            arrived = self.wait(lambda: self.driver.execute_script(
                "const u = window.__liveDefaults.updates.filter((x) => x.key === 'counter' && x.text === arguments[0]);"
                "return u.length ? u[0].at : null", str(index)), 10, f"the page shows {index}")
            latencies.append(arrived - renamed)
        latencies.sort()
        print("MEASURE renameToPage " + " ".join(f"{value:.1f}" for value in latencies), flush=True)
        renders = []
        for _ in range(5):
            self.select("com.example.big")
            self.wait(lambda: self.driver.execute_script(
                "return document.querySelectorAll('#rows tr.row').length") == 1000, 30, "1,000 rows are shown")
            renders.append(self.driver.execute_script("return window.__liveDefaults.lastRenderMilliseconds"))
            self.select("com.example.bench")
        renders.sort()
        print("MEASURE thousandKeysRender " + " ".join(f"{value:.1f}" for value in renders), flush=True)
        return True


if __name__ == "__main__":
    main()
