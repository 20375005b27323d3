// samsa console: refresh the page's main part every few seconds while the
// tab is visible, so health colours and throughput stay live. The pages
// work without it.
(function () {
	"use strict";
	var every = 3000;
	function refresh() {
		if (document.hidden) { return; }
		fetch(location.href, { cache: "no-store" }).then(function (resp) {
			if (!resp.ok && resp.status !== 404 && resp.status !== 503) { throw new Error(resp.status); }
			return resp.text();
		}).then(function (html) {
			var doc = new DOMParser().parseFromString(html, "text/html");
			var fresh = doc.getElementById("main");
			var main = document.getElementById("main");
			if (fresh && main) { main.innerHTML = fresh.innerHTML; }
			var stamp = doc.getElementById("updated");
			if (stamp) { document.getElementById("updated").textContent = stamp.textContent; }
		}).catch(function () {
			var el = document.getElementById("updated");
			if (el) { el.textContent = "not reachable, retrying"; }
		});
	}
	setInterval(refresh, every);
})();
