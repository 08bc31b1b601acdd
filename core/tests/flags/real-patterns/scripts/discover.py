# Lists the links on a page; check that each href resolves.
def discover(page):
    for link in page.locator("a").all():
        href = link.get_attribute("href")
        print(f"[{link.inner_text()}]({href})")
