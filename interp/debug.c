/* device_print and device_assert. */
#include "internal.h"

static void format_value(su_buf *b, ip_val v) {
  tk_dtype dt = ip_elem_dtype(v.type);
  if (v.type->kind != IR_TILE) {
    ip_format(b, dt, v.e[0]);
    return;
  }
  su_buf_puts(b, "[");
  for (int64_t i = 0; i < v.n; i++) {
    if (i) su_buf_puts(b, ", ");
    ip_format(b, dt, v.e[i]);
  }
  su_buf_puts(b, "]");
}

bool ip_run_debug(ip_exec *x, const ip_inst *in) {
  const ir_op *op = in->op;
  if (op->opc == IR_PRINT) {
    su_buf line = {0};
    su_buf_printf(&line, "pid (%u, %u, %u) %s", x->pid[0], x->pid[1], x->pid[2],
                  op->str ? op->str : "");
    for (int k = 0; k < op->noperands; k++) {
      su_buf_puts(&line, " ");
      format_value(&line, IP_IN(x, in, k));
    }
    su_buf_puts(&line, "\n");
    if (x->print) su_buf_put(x->print, line.data, line.len);
    else fputs(su_buf_str(&line), x->out);
    su_buf_free(&line);
    return true;
  }
  SU_ASSERT(op->opc == IR_ASSERT);
  ip_val c = IP_IN(x, in, 0);
  const char *msg = op->str && *op->str ? op->str : "assertion failed";
  for (int64_t i = 0; i < c.n; i++) {
    if (c.e[i].u) continue;
    if (c.type->kind != IR_TILE) return ip_fail(x, op, "device_assert failed", "%s", msg);
    return ip_fail(x, op, "device_assert failed", "%s (element %lld)", msg, (long long)i);
  }
  return true;
}
