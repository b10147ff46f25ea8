SELECT * FROM ricovero;
