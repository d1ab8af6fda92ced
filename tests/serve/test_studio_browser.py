"""The studio page in a real browser: Debian's chromium + chromium-driver driven by selenium
(PyPI), headless. Opens the page, types a line, generates, follows the live progress bar, checks
the image arrives in the gallery, and saves a screenshot (QUILL_STUDIO_SCREENSHOT, default
studio.png in the working directory; docs/images/studio.png is one). Skipped (77) without
selenium or chromium."""
import os
import shutil
import sys

from serve_harness import SKIP, Server, args


def main():
    quill, src = args()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions as EC
        from selenium.webdriver.support.ui import WebDriverWait
    except ImportError:
        print("selenium not installed (scripts/setup-python-serve.sh): skipped")
        sys.exit(SKIP)
    chromium = shutil.which("chromium")
    driver_bin = shutil.which("chromedriver")
    if not chromium or not driver_bin:
        print("chromium / chromium-driver not installed (scripts/setup-debian.sh): skipped")
        sys.exit(SKIP)
    out = os.environ.get("QUILL_STUDIO_SCREENSHOT", "studio.png")
    with Server(quill, "--max-steps", "100") as s:
        opts = webdriver.ChromeOptions()
        opts.binary_location = chromium
        for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=900,760",
                  "--force-device-scale-factor=1"):
            opts.add_argument(a)
        driver = webdriver.Chrome(service=Service(driver_bin), options=opts)
        try:
            driver.get(s.url + "/")
            wait = WebDriverWait(driver, 60)
            wait.until(EC.text_to_be_present_in_element((By.ID, "status"), "ready"))
            wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#style option")) >= 2)
            text = driver.find_element(By.ID, "text")
            text.clear()
            text.send_keys("Kongl. Maj:ts nådiga förordning")
            driver.find_element(By.ID, "seed").send_keys("7")
            # Progress: the bar moves while the SSE steps arrive (many steps so the test can see it).
            steps = driver.find_element(By.ID, "steps")
            steps.clear()
            steps.send_keys("60")
            driver.find_element(By.ID, "go").click()
            seen = set()
            wait.until(lambda d: seen.add(d.find_element(By.ID, "bar").get_attribute("value")) or
                       d.find_elements(By.CSS_SELECTOR, "#gallery li img"))
            img = driver.find_element(By.CSS_SELECTOR, "#gallery li img")
            wait.until(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img))
            assert img.get_attribute("alt") == "Kongl. Maj:ts nådiga förordning"
            assert driver.find_element(By.ID, "error").text == "", driver.find_element(By.ID, "error").text
            assert driver.find_element(By.ID, "status").text == "done"
            fractions = sorted(float(v) for v in seen if v is not None)
            print("progress values seen:", fractions)
            assert any(0 < f < 1 for f in fractions), "the progress bar never showed an intermediate step"
            # A bad request shows its error on the page.
            text.clear()
            text.send_keys("x" * 10)
            driver.execute_script("const s = document.getElementById('steps'); s.removeAttribute('max'); s.value = 1000")
            driver.find_element(By.ID, "go").click()
            wait.until(lambda d: d.find_element(By.ID, "error").text)
            assert "steps" in driver.find_element(By.ID, "error").text
            driver.execute_script("document.getElementById('error').textContent = ''; "
                                  "document.getElementById('text').value = 'Kongl. Maj:ts nådiga förordning';"
                                  "document.getElementById('steps').value = 20;")
            driver.save_screenshot(out)
            print("screenshot:", out)
        finally:
            driver.quit()
        code, err = s.terminate()
        assert code == 0, err


if __name__ == "__main__":
    main()
