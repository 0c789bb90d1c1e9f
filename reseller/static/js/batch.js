// The batch page follows its batch: progress and counts every two seconds until completed.
(function () {
  var box = document.getElementById("batch");
  if (!box || box.dataset.status === "completed") return;
  var progress = document.getElementById("batch-progress");
  var status = box.querySelector("[data-testid=batch-status]");
  var counts = document.getElementById("batch-counts");
  function show(batch) {
    progress.value = batch.progress;
    counts.querySelectorAll("[data-testid^=count-]").forEach(function (cell) {
      var name = cell.getAttribute("data-testid").slice(6);
      cell.textContent = batch.counts[name] || 0;
    });
    if (batch.status === "completed") {
      status.textContent = box.dataset.labelCompleted;
      status.className = "status status-delivered";
    }
  }
  function poll() {
    fetch(box.dataset.statusUrl, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (batch) {
        if (!batch) return;
        show(batch);
        if (batch.status !== "completed") setTimeout(poll, 2000);
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 2000);
})();
