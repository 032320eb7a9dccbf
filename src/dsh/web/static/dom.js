// The two DOM helpers every module of the page draws with.

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function button(label, onclick, className) {
  const node = el("button", className, label);
  node.type = "button";
  node.addEventListener("click", onclick);
  return node;
}
